#if canImport(Glibc)
import Glibc
#endif
import FlowdirTestSupport
import Foundation
import Testing

/// The job server's API as Replicate's own Python client (PyPI `replicate`)
/// sees it: the client flowdir's users already have.
@Suite(.tags(.large, .cog), Component.cog.needed) struct ReplicateClientTests {
    @Test func theOfficialClientCreatesGetsListsAndCancels() async throws {
        try await offPool {
            #expect(CogProcess.isInstalled, "no venv at \(CogProcess.venv): `bash scripts/setup.sh` makes it")
            let dir = try TemporaryDirectory()
            try dir.write("tools/Work.yaml", RemoteJobSetup.work)
            try dir.write("token", "py-token-1234-5678-90ab\n")
            chmod(dir.path + "/token", 0o600)
            let server = try JobServerProcess(dir: dir.path + "/jobserver", arguments: ["--tools", dir.path + "/tools", "--token-file", dir.path + "/token"])
            let script = RepositoryPaths.root + "/Tests/FlowdirCommandsTests/Python/replicate_client_check.py"
            let r = try CommandRunner.run(CogProcess.venv + "/bin/python", [script, "http://127.0.0.1:\(server.port)", server.token])
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            #expect(r.stdout.contains("replicate client: ok"))
        }
    }
}
