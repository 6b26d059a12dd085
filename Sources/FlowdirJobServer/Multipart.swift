import Foundation

/// Just enough `multipart/form-data` for Replicate's files API: the part
/// named `content` (its bytes, filename and type). Other parts (`metadata`,
/// which Replicate's clients send too) are passed over.
///
/// A pure function of the bytes, fed in pieces of any size as they arrive
/// (`Parser`), so an upload goes to disk as it comes and is never held
/// whole in memory; `file` is the same over a body held whole.
enum Multipart {
    /// The boundary of a `multipart/form-data; boundary=…` Content-Type.
    static func boundary(of contentType: String) -> String? {
        guard let b = contentType.range(of: "boundary=", options: .caseInsensitive) else { return nil }
        let value = contentType[b.upperBound...].prefix { $0 != ";" }.trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
        // RFC 2046: 1 to 70 characters.
        guard !value.isEmpty, value.utf8.count <= 200 else { return nil }
        return value
    }

    struct Malformed: Error, CustomStringConvertible {
        var description: String
    }

    struct Parser {
        enum Event: Equatable {
            /// The wanted part begins: its filename, if given, and its type.
            case part(filename: String?, type: String)
            /// Some of its bytes, in order.
            case bytes([UInt8])
            /// It ended (nothing more is read).
            case end
        }

        enum State { case preamble, afterBoundary, headers, body(wanted: Bool), done }

        let field: String
        let dashBoundary: [UInt8]
        /// CRLF, then the dash-boundary: what ends a part's body.
        let delimiter: [UInt8]
        let maxHeaderSize: Int
        private(set) var state = State.preamble
        /// Bytes not yet taken: never more than a piece plus a delimiter's
        /// length, or a part's headers (at most `maxHeaderSize`).
        private var pending: [UInt8] = []

        init(boundary: String, field: String, maxHeaderSize: Int = 16 << 10) {
            self.field = field
            dashBoundary = Array(("--" + boundary).utf8)
            delimiter = Array("\r\n".utf8) + dashBoundary
            self.maxHeaderSize = maxHeaderSize
        }

        var isDone: Bool {
            if case .done = state { return true }
            return false
        }

        mutating func feed(_ chunk: some Collection<UInt8>) throws(Malformed) -> [Event] {
            guard !isDone else { return [] }
            pending.append(contentsOf: chunk)
            var events: [Event] = []
            while true {
                switch state {
                case .done:
                    pending = []
                    return events
                case .preamble:
                    // Whatever comes before the first boundary is passed over.
                    guard let at = Multipart.find(dashBoundary, in: pending, from: 0) else {
                        pending.removeFirst(max(0, pending.count - (dashBoundary.count - 1)))
                        return events
                    }
                    pending.removeFirst(at + dashBoundary.count)
                    state = .afterBoundary
                case .afterBoundary:
                    guard pending.count >= 2 else { return events }
                    if pending[0] == UInt8(ascii: "-"), pending[1] == UInt8(ascii: "-") {
                        // The close delimiter: no part after.
                        throw Malformed(description: "the upload has no part named `\(field)`")
                    }
                    guard pending[0] == 0x0D, pending[1] == 0x0A else {
                        throw Malformed(description: "a boundary is not followed by a line break")
                    }
                    pending.removeFirst(2)
                    state = .headers
                case .headers:
                    let end: Int
                    if pending.count >= 2, pending[0] == 0x0D, pending[1] == 0x0A {
                        end = 0  // a part without headers
                    } else if let e = Multipart.find(Array("\r\n\r\n".utf8), in: pending, from: 0) {
                        end = e + 2
                    } else {
                        guard pending.count <= maxHeaderSize else { throw Malformed(description: "a part's headers are longer than \(maxHeaderSize) bytes") }
                        return events
                    }
                    guard end <= maxHeaderSize else { throw Malformed(description: "a part's headers are longer than \(maxHeaderSize) bytes") }
                    let (name, filename, type) = Multipart.headers(String(decoding: pending[0..<end], as: UTF8.self))
                    pending.removeFirst(end + 2)
                    let wanted = name == field
                    if wanted { events.append(.part(filename: filename, type: type)) }
                    state = .body(wanted: wanted)
                case .body(let wanted):
                    if let at = Multipart.find(delimiter, in: pending, from: 0) {
                        if wanted {
                            if at > 0 { events.append(.bytes(Array(pending[0..<at]))) }
                            events.append(.end)
                            state = .done
                            continue
                        }
                        pending.removeFirst(at + delimiter.count)
                        state = .afterBoundary
                        continue
                    }
                    // All but what could be the start of a delimiter split across pieces.
                    let safe = max(0, pending.count - (delimiter.count - 1))
                    if wanted, safe > 0 { events.append(.bytes(Array(pending[0..<safe]))) }
                    pending.removeFirst(safe)
                    return events
                }
            }
        }

        /// The body has ended: an error unless the wanted part was whole.
        func finish() throws(Malformed) {
            guard isDone else { throw Malformed(description: "the upload ended before its part named `\(field)` did (no closing boundary)") }
        }
    }

    /// The part named `field` of a whole body.
    static func file(_ body: [UInt8], contentType: String, field: String) -> (bytes: [UInt8], name: String, type: String)? {
        guard let boundary = boundary(of: contentType) else { return nil }
        var parser = Parser(boundary: boundary, field: field)
        guard let events = try? parser.feed(body), (try? parser.finish()) != nil else { return nil }
        var bytes: [UInt8] = []
        var name = "upload"
        var type = "application/octet-stream"
        for e in events {
            switch e {
            case .part(let filename, let t):
                name = filename ?? "upload"
                type = t
            case .bytes(let b): bytes += b
            case .end: break
            }
        }
        return (bytes, name, type)
    }

    /// A part's `name`, `filename` and Content-Type.
    static func headers(_ text: String) -> (name: String?, filename: String?, type: String) {
        var disposition = ""
        var type = "application/octet-stream"
        for line in text.components(separatedBy: "\r\n") {
            let lower = line.lowercased()
            if lower.hasPrefix("content-disposition:") { disposition = String(line.dropFirst(20)) }
            if lower.hasPrefix("content-type:") { type = line.dropFirst(13).trimmingCharacters(in: .whitespaces) }
        }
        return (parameter("name", in: disposition), parameter("filename", in: disposition), type)
    }

    /// `filename` of a Content-Disposition header (an upload's raw body).
    static func filename(_ disposition: String) -> String? { parameter("filename", in: disposition) }

    /// A `key="value"` (or `key=value`) parameter of a header's value.
    static func parameter(_ key: String, in header: String) -> String? {
        for piece in header.split(separator: ";") {
            let kv = piece.split(separator: "=", maxSplits: 1)
            guard kv.count == 2, kv[0].trimmingCharacters(in: .whitespaces).lowercased() == key else { continue }
            let v = kv[1].trimmingCharacters(in: .whitespaces)
            return v.hasPrefix("\"") && v.hasSuffix("\"") && v.count >= 2 ? String(v.dropFirst().dropLast()) : v
        }
        return nil
    }

    static func find(_ needle: [UInt8], in hay: [UInt8], from: Int) -> Int? {
        guard !needle.isEmpty, from >= 0, hay.count >= needle.count, from <= hay.count - needle.count else { return nil }
        let first = needle[0]
        var i = from
        while i <= hay.count - needle.count {
            if hay[i] == first, hay[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}
