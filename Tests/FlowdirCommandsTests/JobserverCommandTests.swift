#if canImport(Glibc)
import Glibc
#endif
import FlowdirTestSupport
import Foundation
import Testing

/// `flowdir jobserver` never serves without a token (docs/security.md).
@Suite(.tags(.large), Tier.notQuick) struct JobserverCommandTests {
    @Test func withoutATokenFileItKeepsOneInItsFolderAndSaysWhereNeverWhat() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            let server = try JobServerProcess(dir: dir.path + "/data")
            var st = stat()
            #expect(stat(dir.path + "/data/token", &st) == 0 && st.st_mode & 0o777 == 0o600)
            #expect(server.token.count >= 16)
            let out = try String(contentsOfFile: dir.path + "/data/server.out", encoding: .utf8)
            #expect(out.contains("clients send the token in \(dir.path)/data/token") && !out.contains(server.token), "\(out)")
            let none = try CommandRunner.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", server.url + "/predictions"])
            #expect(none.stdout == "401")
            let with = try CommandRunner.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer \(server.token)",
                                                               server.url + "/predictions"])
            #expect(with.stdout == "200")
            server.stop()
            // The same token the next time.
            let again = try JobServerProcess(dir: dir.path + "/data")
            #expect(again.token == server.token)
            again.stop()
        }
    }

    @Test func aHostBeyondLoopbackNeedsATokenFileAndABadOneIsRefused() throws {
        let dir = try TemporaryDirectory()
        let open = try CommandRunner.flowdir(["jobserver", "--host", "0.0.0.0", "--port", "0", "--dir", dir.path + "/data"])
        #expect(open.status == 64 && open.stderr.contains("refusing to serve 0.0.0.0") && open.stderr.contains("--token-file"), "\(open.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/data/token"))
        try dir.write("readable", "0123456789abcdef0123\n")
        chmod(dir.path + "/readable", 0o644)
        let readable = try CommandRunner.flowdir(["jobserver", "--port", "0", "--dir", dir.path + "/data", "--token-file", dir.path + "/readable"])
        #expect(readable.status != 0 && readable.stderr.contains("can be read or changed by others") && readable.stderr.contains("chmod 600"), "\(readable.stderr)")
        try dir.write("weak", "aaaaaaaaaaaaaaaaaaaa\n")
        chmod(dir.path + "/weak", 0o600)
        let weak = try CommandRunner.flowdir(["jobserver", "--port", "0", "--dir", dir.path + "/data", "--token-file", dir.path + "/weak"])
        #expect(weak.status != 0 && weak.stderr.contains("too easy to guess"), "\(weak.stderr)")
        for (option, value) in [("--keep", "forever"), ("--max-upload", "1PB"), ("--file-lifetime", "-1"), ("--cancel-timeout", "nan")] {
            let r = try CommandRunner.flowdir(["jobserver", "--port", "0", "--dir", dir.path + "/data", option, value])
            #expect(r.status != 0 && r.stderr.contains(option), "\(option) \(value): \(r.stderr)")
        }
    }
}
