import FlowdirCore
import FlowdirTestSupport
import Testing

@Suite(.tags(.small)) struct ContentCheckTests {
    @Test func validFilesPassTheirTypes() throws {
        #expect(try ContentCheck.check(SampleFiles.png(), as: .image) == .png)
        #expect(try ContentCheck.check(SampleFiles.png(), as: .mask) == .png)
        #expect(try ContentCheck.check(SampleFiles.png(), as: .depth) == .png)
        #expect(try ContentCheck.check(SampleFiles.jpeg(), as: .image) == .jpeg)
        #expect(try ContentCheck.check(SampleFiles.webp(), as: .image) == .webp)
        #expect(try ContentCheck.check(Array(#"{"a": [1, 2.5, "x"]}"#.utf8), as: .json) == .json)
        #expect(try ContentCheck.check(Array("héllo\n".utf8), as: .text) == .text)
        #expect(try ContentCheck.check(Array("anything".utf8), as: .file) == .binary)
        #expect(try ContentCheck.check(SampleFiles.jpeg(), as: .any) == .jpeg)
    }

    @Test func otherFormatsAreRecognised() {
        #expect(ContentCheck.sniff(Array("RIFF\0\0\0\0WAVEfmt ".utf8)) == .wav)
        #expect(ContentCheck.sniff([0, 0, 0, 0x18] + Array("ftypmp42".utf8)) == .mp4)
        #expect(ContentCheck.sniff(Array("fLaC".utf8)) == .flac)
        #expect(ContentCheck.sniff(Array("OggS".utf8)) == .ogg)
        #expect(ContentCheck.sniff(Array("ID3\u{3}".utf8)) == .mp3)
        #expect(ContentCheck.sniff([0x1A, 0x45, 0xDF, 0xA3]) == .webm)
        #expect(ContentCheck.sniff(Array("GIF89a".utf8)) == .gif)
        #expect(ContentCheck.sniff([0x49, 0x49, 0x2A, 0x00]) == .tiff)
        // MPEG-1 Layer III, 128 kbit/s, 44.1 kHz: a frame header, no tag.
        #expect(ContentCheck.sniff([0xFF, 0xFB, 0x90, 0x64]) == .mp3)
    }

    /// A generic file's name comes from its content only when the content is
    /// sure: random bytes name it `.bin`, every time (a rerun that named it
    /// otherwise would drop the earlier file).
    @Test func aFileIsNamedByAFormatOnlyWhenItsSignatureIsSure() throws {
        let untagged: [UInt8] = [0xFF, 0xFB, 0x90, 0x64] + Array(repeating: 0x55, count: 60)
        #expect(try ContentCheck.check(untagged, as: .audio) == .mp3)
        #expect(try ContentCheck.check(untagged, as: .file) == .binary)
        #expect(try ContentCheck.check(Array("ID3\u{3}\0\0".utf8) + untagged, as: .file) == .mp3)
        // Sync bits with reserved fields are no header at all.
        #expect(ContentCheck.sniff([0xFF, 0xFF, 0xFF, 0xFF]) == nil)
        #expect(ContentCheck.sniff([0xFF, 0xE9, 0x90, 0x00]) == nil)
        // 100,000 heads of seeded random bytes (the same each run): none is
        // taken for a format by a `.file` port; the 2-byte sync alone took ~50.
        var state: UInt64 = 0x5EED_F10D
        func next() -> UInt64 {  // SplitMix64
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        var named = 0, syncOnly = 0
        for _ in 0..<100_000 {
            let head = (0..<8).flatMap { _ in withUnsafeBytes(of: next()) { Array($0) } }
            if try ContentCheck.check(head, as: .file) != .binary { named += 1 }
            if head[0] == 0xFF, head[1] & 0xE0 == 0xE0 { syncOnly += 1 }
        }
        #expect(named == 0)
        #expect(syncOnly > 20)
    }

    @Test func wrongOrBrokenFilesAreRefusedWithAReason() {
        func reason(_ bytes: [UInt8], _ type: PortType) -> String? {
            do { _ = try ContentCheck.check(bytes, as: type); return nil } catch { return error.reason }
        }
        let png = SampleFiles.png()
        #expect(reason([], .image) == "the file is empty")
        #expect(reason(Array(png.prefix(png.count - 12)), .image) == "the PNG is truncated (no IEND chunk; is the download complete?)")
        #expect(reason(Array(png.prefix(45)), .mask)?.hasPrefix("the PNG is truncated in its IDAT chunk") == true)
        #expect(reason(SampleFiles.jpeg(), .mask) == "expected a PNG mask, found a JPEG file")
        #expect(reason(Array(SampleFiles.jpeg().dropLast(2)), .image) == "the JPEG is truncated (no end-of-image marker; is the download complete?)")
        #expect(reason(Array("just text".utf8), .image) == "expected an image (PNG, JPEG or WebP), found text")
        #expect(reason([0x00, 0x01, 0x02, 0x03, 0x04], .image) == "expected an image (PNG, JPEG or WebP), found unrecognised data (starts 00 01 02 03)")
        #expect(reason(Array("{\"a\": }".utf8), .json) == "expected JSON, but it does not parse: line 1, column 7: expected a value, found '}'")
        #expect(reason([0x68, 0xFF, 0x69], .text) == "expected UTF-8 text, found an invalid byte at offset 1")
        var corrupt = png
        corrupt[20] ^= 0xFF  // inside IHDR: the CRC no longer matches
        #expect(reason(corrupt, .image) == "the PNG header is corrupt (bad CRC)")
        #expect(reason(Array(SampleFiles.webp().dropLast(3)), .image) == "the WebP file is truncated (is the download complete?)")
    }

    @Test func crc32MatchesTheKnownValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
    }
}
