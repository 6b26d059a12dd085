#if canImport(Glibc)
import Glibc
#endif
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// Servers' token files (docs/security.md): private from the first byte,
/// and refused when others could read or swap them, or when weak.
@Suite(.tags(.medium)) struct TokenFileTests {
    func mode(_ path: String) -> mode_t {
        var st = stat()
        stat(path, &st)
        return st.st_mode & 0o777
    }

    @Test func aMissingFileIsMadeMode600AndReadBackTheSame() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/token"
        // Even with a umask that lets everyone read new files.
        let old = umask(0)
        defer { umask(old) }
        let made = try TokenFile.readOrCreate(path)
        #expect(made.count >= TokenFile.minimumLength)
        #expect(mode(path) == 0o600)
        #expect(try TokenFile.readOrCreate(path) == made)
        // No temp file is left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["token"])
    }

    @Test func aFileOthersCanReadIsRefusedWithTheFix() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/token"
        try dir.write("token", "0123456789abcdef0123456789abcdef\n")
        chmod(path, 0o644)
        #expect(throws: TokenFile.Refused.self) { try TokenFile.read(path) }
        do { _ = try TokenFile.read(path) } catch { #expect(error.hint == "chmod 600 \(path)") }
        chmod(path, 0o600)
        #expect(try TokenFile.read(path) == "0123456789abcdef0123456789abcdef")
    }

    @Test func weakTokensAndLinksAreRefused() throws {
        let dir = try TemporaryDirectory()
        try dir.write("short", "abc123\n")
        try dir.write("same", "aaaaaaaaaaaaaaaaaaaaaaaa\n")
        try dir.write("real", "0123456789abcdef0123456789abcdef\n")
        for f in ["short", "same", "real"] { chmod(dir.path + "/" + f, 0o600) }
        symlink(dir.path + "/real", dir.path + "/link")
        for f in ["short", "same", "link"] {
            #expect(throws: TokenFile.Refused.self, "\(f)") { try TokenFile.readOrCreate(dir.path + "/" + f) }
        }
    }
}
