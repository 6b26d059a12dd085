import FlowdirCore

/// Small, real files of each format, built in code so tests need no binaries.
public enum SampleFiles {
    /// A valid PNG of `width`×`height` (8-bit gray); the IDAT is real zlib
    /// (stored blocks), so other tools can open it too.
    public static func png(width: Int = 2, height: Int = 2) -> [UInt8] {
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        var ihdr = be32(UInt32(width)) + be32(UInt32(height))
        ihdr += [8, 0, 0, 0, 0]  // bit depth 8, gray, deflate, no filter, no interlace
        out += chunk("IHDR", ihdr)
        var raw: [UInt8] = []
        for _ in 0..<height { raw += [0] + [UInt8](repeating: 0x80, count: width) }
        out += chunk("IDAT", zlibStored(raw))
        out += chunk("IEND", [])
        return out
    }

    /// A minimal JPEG: SOI, an APP0 header and EOI.
    public static func jpeg() -> [UInt8] {
        [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8) + [0, 1, 1, 0, 0, 1, 0, 1, 0, 0] + [0xFF, 0xD9]
    }

    public static func webp() -> [UInt8] {
        let body = Array("WEBP".utf8) + Array("VP8L".utf8) + le32(5) + [0x2F, 0, 0, 0, 0, 0]
        return Array("RIFF".utf8) + le32(UInt32(body.count)) + body
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typed = Array(type.utf8) + data
        return be32(UInt32(data.count)) + typed + be32(CRC32.checksum(typed))
    }

    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        let len = UInt16(data.count)
        out += [1, UInt8(len & 0xFF), UInt8(len >> 8), UInt8(~len & 0xFF), UInt8(~len >> 8)]
        out += data
        var a: UInt32 = 1, b: UInt32 = 0
        for x in data { a = (a + UInt32(x)) % 65521; b = (b + a) % 65521 }
        return out + be32(b << 16 | a)
    }

    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func le32(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
}
