import Foundation

/// Just enough `multipart/form-data` for Replicate's files API: the part
/// named `content` (its bytes, filename and type). Other parts (`metadata`,
/// which Replicate's clients send too) are passed over.
enum Multipart {
    static func file(_ body: [UInt8], contentType: String, field: String) -> (bytes: [UInt8], name: String, type: String)? {
        guard let b = contentType.range(of: "boundary=") else { return nil }
        let value = contentType[b.upperBound...].prefix { $0 != ";" }.trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
        guard !value.isEmpty else { return nil }
        let boundary = Array(("--" + value).utf8)
        let delimiter = Array("\r\n".utf8) + boundary
        guard var at = find(boundary, in: body, from: 0) else { return nil }
        while true {
            let headerStart = at + boundary.count + 2
            guard headerStart <= body.count, let headerEnd = find(Array("\r\n\r\n".utf8), in: body, from: headerStart),
                  let end = find(delimiter, in: body, from: headerEnd + 4) else { return nil }
            let headers = String(decoding: body[headerStart..<headerEnd], as: UTF8.self)
            var disposition = ""
            var type = "application/octet-stream"
            for line in headers.components(separatedBy: "\r\n") {
                let lower = line.lowercased()
                if lower.hasPrefix("content-disposition:") { disposition = String(line.dropFirst(20)) }
                if lower.hasPrefix("content-type:") { type = line.dropFirst(13).trimmingCharacters(in: .whitespaces) }
            }
            if parameter("name", in: disposition) == field {
                return (Array(body[(headerEnd + 4)..<end]), parameter("filename", in: disposition) ?? "upload", type)
            }
            at = end + 2
        }
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
