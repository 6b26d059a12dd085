import FlowdirJobServer
import FlowdirTestSupport
import Foundation
import Testing

/// The job server's API as Replicate's own Python client (PyPI `replicate`)
/// sees it: the client flowdir's users already have.
@Suite(.tags(.medium, .cog), Component.cog.needed) struct ReplicateClientTests {
    @Test func theOfficialClientCreatesGetsListsCancelsRunsAndValidatesWebhooks() async throws {
        try #require(CogProcess.isInstalled, "no venv at \(CogProcess.venv): `bash scripts/setup.sh` makes it")
        let h = try await Harness()
        let script = RepositoryPaths.root + "/Tests/FlowdirJobServerTests/Python/replicate_client_check.py"
        let base = h.base
        // The script blocks on its process: off the cooperative pool the server needs.
        let r = try await offPool { try CommandRunner.run(CogProcess.venv + "/bin/python", [script, base, Harness.token]) }
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("replicate client: ok"))
    }
}
