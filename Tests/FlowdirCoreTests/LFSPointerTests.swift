import FlowdirCore
import FlowdirTestSupport
import Testing

/// Git LFS pointers as the spec (v1) and git-lfs write them, read strictly.
@Suite(.tags(.small)) struct LFSPointerTests {
    let oid = "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393"

    @Test func writtenAsGitLFSWritesIt() throws {
        let p = try #require(LFSPointer(oid: oid, size: 12345))
        #expect(p.text == "version https://git-lfs.github.com/spec/v1\noid sha256:\(oid)\nsize 12345\n")
        #expect(p.objectPath == "lfs/objects/4d/7a/\(oid)")
        #expect(try LFSPointer.parse(p.bytes).get() == p)
    }

    @Test func extensionsAreKeptInOrder() throws {
        let text = "version https://git-lfs.github.com/spec/v1\next-0-foo sha256:\(oid)\noid sha256:\(oid)\nsize 5\n"
        let p = try LFSPointer.parse(Array(text.utf8)).get()
        #expect(p.extensions.map(\.key) == ["ext-0-foo"])
        #expect(p.text == text)
    }

    @Test(arguments: [
        ("hello world\n", "not a Git LFS pointer"),
        ("version https://git-lfs.github.com/spec/v1\noid sha256:\(String(repeating: "a", count: 64))\nsize 5", "line break"),
        ("version https://git-lfs.github.com/spec/v2\noid sha256:\(String(repeating: "a", count: 64))\nsize 5\n", "line 1"),
        ("version https://git-lfs.github.com/spec/v1\noid sha256:\(String(repeating: "A", count: 64))\nsize 5\n", "oid"),
        ("version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 5\n", "oid"),
        ("version https://git-lfs.github.com/spec/v1\noid md5:\(String(repeating: "a", count: 64))\nsize 5\n", "oid"),
        ("version https://git-lfs.github.com/spec/v1\noid sha256:\(String(repeating: "a", count: 64))\nsize -5\n", "size"),
        ("version https://git-lfs.github.com/spec/v1\noid sha256:\(String(repeating: "a", count: 64))\nsize 99999999999999999999\n", "size"),
        ("version https://git-lfs.github.com/spec/v1\noid sha256:\(String(repeating: "a", count: 64))\nsize 05\n", "size"),
        ("version https://git-lfs.github.com/spec/v1\nsize 5\noid sha256:\(String(repeating: "a", count: 64))\n", "order"),
        ("version https://git-lfs.github.com/spec/v1\noid sha256:\(String(repeating: "a", count: 64))\n", "no size"),
        ("version https://git-lfs.github.com/spec/v1\nsize 5\n", "no oid"),
        ("version https://git-lfs.github.com/spec/v1\noid  sha256:\(String(repeating: "a", count: 64))\nsize 5\n", "oid"),
        ("version https://git-lfs.github.com/spec/v1\r\noid sha256:\(String(repeating: "a", count: 64))\r\nsize 5\r\n", "carriage return"),
        // Found by the lfs-pointer fuzz target: "\r\n" is one Character, and passed for a line break at the end.
        ("version https://git-lfs.github.com/spec/v1\noid sha256:\(String(repeating: "a", count: 64))\nsize 5\r\n", "carriage return"),
        ("version https://git-lfs.github.com/spec/v1\next-0-foo a\u{0}b\noid sha256:\(String(repeating: "a", count: 64))\nsize 5\n", "control character"),
        ("version https://git-lfs.github.com/spec/v1\ne9foh x\noid sha256:\(String(repeating: "a", count: 64))\nsize 5\n", "not a key of a Git LFS pointer"),
        ("version https://git-lfs.github.com/spec/v1\nOID sha256:\(String(repeating: "a", count: 64))\nsize 5\n", "key"),
    ])
    func badPointersAreNamedNeverTrusted(text: String, why: String) {
        switch LFSPointer.parse(Array(text.utf8)) {
        case .success(let p): Issue.record("read as \(p)")
        case .failure(let problem): #expect(problem.description.contains(why), "\(problem)")
        }
    }

    @Test func largeFilesAreNotPointers() {
        var big = Array(LFSPointer(oid: oid, size: 1)!.bytes)
        big += [UInt8](repeating: 0x20, count: 2000)
        #expect(!LFSPointer.looksLikePointer(big))
        #expect(LFSPointer.parse(big) == .failure(.notAPointer))
    }
}
