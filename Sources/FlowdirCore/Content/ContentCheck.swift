/// Random access to the bytes of a file (or of memory), so content checks
/// need not read a 2 GB video to look at its header.
public protocol ByteSource {
    var count: Int { get }
    /// Up to `length` bytes from `offset`; fewer at the end.
    func bytes(at offset: Int, length: Int) throws -> [UInt8]
}

extension Array: ByteSource where Element == UInt8 {
    public func bytes(at offset: Int, length: Int) throws -> [UInt8] {
        guard offset < count, offset >= 0 else { return [] }
        return Array(self[offset..<Swift.min(count, offset + length)])
    }
}

/// The formats flowdir recognises in files entering a workflow.
public enum ContentFormat: String, Sendable, Equatable {
    case png, jpeg, webp, gif, tiff, exr, npy
    case mp4, webm, avi
    case wav, mp3, flac, ogg
    case json, text, binary

    /// The extension a tool's output of `type` gets when the tool declares none.
    public static func defaultExtension(for type: PortType) -> String {
        switch type {
        case .image, .mask, .depth: "png"
        case .json: "json"
        case .text: "txt"
        case .video: "mp4"
        case .audio: "wav"
        case .file, .any: "bin"
        }
    }

    /// The extension a file of this format gets in `out/`.
    public var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .text: "txt"
        case .binary: "bin"
        case .webm: "webm"
        default: rawValue
        }
    }
}

/// The content check of each port type (docs/templates-and-tools.md,
/// "Types"): magic bytes or a parse, applied to every file that enters a
/// workflow.
public enum ContentCheck {
    public struct Failure: Error, Equatable, Sendable, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
        public init(_ reason: String) { self.reason = reason }
    }

    /// Largest JSON or text file checked by parsing it whole.
    public static let maxParsedSize = 64 << 20

    /// Checks that the bytes are a valid `type`; returns the format found.
    /// - Parameter allowEmpty: a tool may legitimately write an empty text or
    ///   file output; a person's empty answer, or an empty image, is a mistake.
    public static func check(_ source: some ByteSource, as type: PortType, allowEmpty: Bool = false) throws(Failure) -> ContentFormat {
        if source.count == 0 {
            if allowEmpty, [.any, .file, .text].contains(type) { return type == .text ? .text : .binary }
            throw Failure("the file is empty")
        }
        let head: [UInt8]
        do { head = try source.bytes(at: 0, length: 64) } catch {
            throw Failure("the file could not be read: \(error)")
        }
        let sniffed = sniff(head)
        switch type {
        case .any, .file:
            if let sniffed, sniffed == .png { try verifyPNG(source) }
            // An MP3 without a tag announces itself in 11 bits of sync and a
            // few fields, which one file of random bytes in ~5,000 has: a
            // generic file is named by its content only when the content
            // says so for sure (seen: a tool's random output became
            // `out.mp3` on one run of several, and its earlier `out.bin`
            // went with the rename).
            if sniffed == .mp3, !head.starts(with: "ID3".utf8) { return .binary }
            return sniffed ?? .binary
        case .image:
            guard let f = sniffed, [.png, .jpeg, .webp].contains(f) else {
                throw Failure("expected an image (PNG, JPEG or WebP), found \(describe(sniffed, head))")
            }
            try verify(f, source)
            return f
        case .mask:
            guard sniffed == .png else { throw Failure("expected a PNG mask, found \(describe(sniffed, head))") }
            try verifyPNG(source)
            return .png
        case .depth:
            guard let f = sniffed, [.png, .tiff, .exr, .npy].contains(f) else {
                throw Failure("expected a depth map (PNG, TIFF, EXR or .npy), found \(describe(sniffed, head))")
            }
            if f == .png { try verifyPNG(source) }
            return f
        case .video:
            guard let f = sniffed, [.mp4, .webm, .avi, .gif].contains(f) else {
                throw Failure("expected a video (MP4/MOV, WebM/MKV, AVI or GIF), found \(describe(sniffed, head))")
            }
            return f
        case .audio:
            guard let f = sniffed, [.wav, .mp3, .flac, .ogg, .mp4].contains(f) else {
                throw Failure("expected audio (WAV, MP3, FLAC, Ogg or M4A), found \(describe(sniffed, head))")
            }
            return f
        case .json:
            let data = try whole(source)
            do {
                _ = try JSONParser.parse(data, file: "", allowComments: false)
            } catch {
                throw Failure("expected JSON, but it does not parse: line \(error.line), column \(error.column): \(error.message)")
            }
            return .json
        case .text:
            let data = try whole(source)
            if let offset = UTF8Check.firstInvalid(in: data) {
                throw Failure("expected UTF-8 text, found an invalid byte at offset \(offset)")
            }
            if let nul = data.firstIndex(of: 0) {
                throw Failure("expected text, found a NUL byte at offset \(nul)")
            }
            return .text
        }
    }

    /// The format the first bytes announce, if any.
    public static func sniff(_ b: [UInt8]) -> ContentFormat? {
        func at(_ i: Int, _ s: [UInt8]) -> Bool { b.count >= i + s.count && Array(b[i..<i + s.count]) == s }
        if at(0, [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if at(0, [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if at(0, Array("RIFF".utf8)) {
            if at(8, Array("WEBP".utf8)) { return .webp }
            if at(8, Array("WAVE".utf8)) { return .wav }
            if at(8, Array("AVI ".utf8)) { return .avi }
        }
        if at(0, Array("GIF87a".utf8)) || at(0, Array("GIF89a".utf8)) { return .gif }
        if at(0, [0x49, 0x49, 0x2A, 0x00]) || at(0, [0x4D, 0x4D, 0x00, 0x2A]) { return .tiff }
        if at(0, [0x76, 0x2F, 0x31, 0x01]) { return .exr }
        if at(0, [0x93] + Array("NUMPY".utf8)) { return .npy }
        if at(4, Array("ftyp".utf8)) { return .mp4 }
        if at(0, [0x1A, 0x45, 0xDF, 0xA3]) { return .webm }
        if at(0, Array("fLaC".utf8)) { return .flac }
        if at(0, Array("OggS".utf8)) { return .ogg }
        if at(0, Array("ID3".utf8)) || mpegFrameHeader(b) { return .mp3 }
        return nil
    }

    /// An MPEG audio frame header: the 11-bit sync, then a version, layer,
    /// bitrate and sample rate that are not the reserved values.
    static func mpegFrameHeader(_ b: [UInt8]) -> Bool {
        guard b.count >= 3, b[0] == 0xFF, b[1] & 0xE0 == 0xE0 else { return false }
        let version = (b[1] >> 3) & 3, layer = (b[1] >> 1) & 3, bitrate = b[2] >> 4, rate = (b[2] >> 2) & 3
        return version != 1 && layer != 0 && bitrate != 15 && rate != 3
    }

    private static func describe(_ f: ContentFormat?, _ head: [UInt8]) -> String {
        if let f { return "a \(f.rawValue.uppercased()) file" }
        if UTF8Check.firstInvalid(in: head, allowCutEnd: true) == nil, !head.contains(0) { return "text" }
        return "unrecognised data (starts " + head.prefix(4).map { hex($0) }.joined(separator: " ") + ")"
    }

    private static func verify(_ f: ContentFormat, _ source: some ByteSource) throws(Failure) {
        switch f {
        case .png: try verifyPNG(source)
        case .jpeg: try verifyJPEG(source)
        case .webp: try verifyRIFF(source, name: "WebP")
        default: break
        }
    }

    /// Walks the chunks to IEND, so a truncated or padded download is caught;
    /// IHDR's CRC and size are checked too.
    static func verifyPNG(_ s: some ByteSource) throws(Failure) {
        var offset = 8
        var sawIHDR = false
        var chunks = 0
        while true {
            let header = read(s, offset, 8)
            guard header.count == 8 else { throw Failure("the PNG is truncated (no IEND chunk; is the download complete?)") }
            let length = Int(be32(header, 0))
            let type = String(decoding: header[4..<8], as: UTF8.self)
            guard length <= 0x7FFF_FFFF, offset + 12 + length <= s.count else {
                throw Failure("the PNG is truncated in its \(type) chunk (is the download complete?)")
            }
            if chunks == 0 {
                guard type == "IHDR", length == 13 else { throw Failure("the PNG has no IHDR header") }
                let body = read(s, offset + 4, 4 + 13 + 4)
                guard body.count == 21, CRC32.checksum(body[0..<17]) == be32(body, 17) else {
                    throw Failure("the PNG header is corrupt (bad CRC)")
                }
                guard be32(body, 4) > 0, be32(body, 8) > 0 else { throw Failure("the PNG has zero width or height") }
                sawIHDR = true
            }
            chunks += 1
            offset += 12 + length
            if type == "IEND" { break }
        }
        guard sawIHDR else { throw Failure("the PNG has no IHDR header") }
    }

    static func verifyJPEG(_ s: some ByteSource) throws(Failure) {
        // A complete JPEG ends with EOI; some writers pad after it, so look near the end.
        let tail = read(s, max(0, s.count - 4096), 4096)
        var found = false
        if tail.count >= 2 {
            for i in stride(from: tail.count - 2, through: 0, by: -1) where tail[i] == 0xFF && tail[i + 1] == 0xD9 {
                found = true
                break
            }
        }
        if !found { throw Failure("the JPEG is truncated (no end-of-image marker; is the download complete?)") }
    }

    static func verifyRIFF(_ s: some ByteSource, name: String) throws(Failure) {
        let header = read(s, 0, 12)
        let declared = Int(le32(header, 4)) + 8
        guard declared <= s.count else { throw Failure("the \(name) file is truncated (is the download complete?)") }
    }

    private static func whole(_ s: some ByteSource) throws(Failure) -> [UInt8] {
        guard s.count <= maxParsedSize else {
            throw Failure("the file is \(s.count) bytes; files parsed whole are limited to \(maxParsedSize >> 20) MiB")
        }
        return read(s, 0, s.count)
    }

    private static func read(_ s: some ByteSource, _ offset: Int, _ length: Int) -> [UInt8] {
        (try? s.bytes(at: offset, length: length)) ?? []
    }

    private static func be32(_ b: [UInt8], _ i: Int) -> UInt32 {
        guard b.count >= i + 4 else { return 0 }
        return UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
    }

    private static func le32(_ b: [UInt8], _ i: Int) -> UInt32 {
        guard b.count >= i + 4 else { return 0 }
        return UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
    }
}

public enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes { c = table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }
}

public enum UTF8Check {
    /// The offset of the first byte that is not valid UTF-8, or `nil`.
    /// With `allowCutEnd`, a sequence cut off by the end of a bounded read
    /// (a file's first 64 bytes) is not counted against it.
    public static func firstInvalid(in bytes: [UInt8], allowCutEnd: Bool = false) -> Int? {
        var i = 0
        let n = bytes.count
        while i < n {
            let b = bytes[i]
            if b < 0x80 { i += 1; continue }
            let need: Int
            if b & 0xE0 == 0xC0, b >= 0xC2 { need = 1 }
            else if b & 0xF0 == 0xE0 { need = 2 }
            else if b & 0xF8 == 0xF0, b <= 0xF4 { need = 3 }
            else { return i }
            if i + need >= n { return allowCutEnd ? nil : i }
            for k in 1...need where bytes[i + k] & 0xC0 != 0x80 { return i }
            i += need + 1
        }
        return nil
    }
}


private func hex(_ b: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(b >> 4)], digits[Int(b & 0xF)]])
}
