@testable import FlowdirIO
import Testing

/// SHA-256 and HMAC-SHA256 over libcrypto (Digest.swift), against the
/// published vectors: what swift-crypto gave before must come out the same.
@Suite struct DigestTests {
    // NIST FIPS 180-2 examples (and the empty message, as sha256sum prints it).
    static let sha256Vectors: [(String, String)] = [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ]
    static let millionA = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"

    @Test func sha256MatchesNIST() {
        for (message, hex) in Self.sha256Vectors {
            #expect(Digest.sha256Hex(Array(message.utf8)) == hex)
            #expect(Digest.sha256(Array(message.utf8)).count == 32)
        }
        #expect(Digest.sha256Hex([UInt8](repeating: 0x61, count: 1_000_000)) == Self.millionA)
    }

    @Test func theHasherFedInPiecesGivesTheSame() {
        var h = SHA256Hasher()
        #expect(Digest.hex(h.finalize()) == Self.sha256Vectors[0].1)
        let a = [UInt8](repeating: 0x61, count: 1000)
        for _ in 0..<1000 { a.withUnsafeBytes { h.update($0) } }
        #expect(Digest.hex(h.finalize()) == Self.millionA)
        // Asked again it says the same; fed more, it goes on from there.
        #expect(Digest.hex(h.finalize()) == Self.millionA)
        var abc = SHA256Hasher()
        abc.update(Array("a".utf8))
        _ = abc.finalize()
        abc.update([])
        abc.update(Array("bc".utf8))
        #expect(Digest.hex(abc.finalize()) == Self.sha256Vectors[1].1)
    }

    // RFC 4231, test cases 1–7 (5 compares the first 128 bits, as the RFC does).
    static let rfc4231: [(key: [UInt8], data: [UInt8], mac: String)] = [
        ([UInt8](repeating: 0x0b, count: 20), Array("Hi There".utf8),
         "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
        (Array("Jefe".utf8), Array("what do ya want for nothing?".utf8),
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
        ([UInt8](repeating: 0xaa, count: 20), [UInt8](repeating: 0xdd, count: 50),
         "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"),
        (Array(1...25), [UInt8](repeating: 0xcd, count: 50),
         "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"),
        ([UInt8](repeating: 0x0c, count: 20), Array("Test With Truncation".utf8), "a3b6167473100ee06e0c796c2955552b"),
        ([UInt8](repeating: 0xaa, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
         "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
        ([UInt8](repeating: 0xaa, count: 131),
         Array(("This is a test using a larger than block-size key and a larger than block-size data. "
             + "The key needs to be hashed before being used by the HMAC algorithm.").utf8),
         "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"),
    ]

    @Test func hmacMatchesRFC4231() {
        for (i, v) in Self.rfc4231.enumerated() {
            let mac = Digest.hex(HMACSHA256.authenticationCode(for: v.data, key: v.key))
            #expect(mac.hasPrefix(v.mac), "RFC 4231 test case \(i + 1)")
            #expect(mac.count == 64)
        }
    }

    /// An empty key and message (a secret left empty in a config) are an
    /// answer, not a trap; keys either side of the 64-byte block agree with
    /// Python's hmac module (the hashed-first path is ours, not libcrypto's).
    @Test func edgeKeys() {
        #expect(Digest.hex(HMACSHA256.authenticationCode(for: [], key: []))
            == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
        #expect(Digest.hex(HMACSHA256.authenticationCode(for: Array("flowdir".utf8), key: Array(0..<64)))
            == "8ddd6cc854335d13ea1e59ae86a1ca3e2678b44b8e4ad410c81e0973b33e3b8d")
        #expect(Digest.hex(HMACSHA256.authenticationCode(for: Array("flowdir".utf8), key: Array(0..<65)))
            == "cae325b56751b508bbae6d6088a032a195f68675440a8d5e5bfb45a4e3e784d6")
    }
}
