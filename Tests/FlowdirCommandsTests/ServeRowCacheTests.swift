import FlowdirTestSupport
import Foundation
import Testing

/// The list's rows kept across restarts (`ServeRowCache`): a server started
/// again takes a row from the file while its instance's git index, inbox
/// and instance.yaml are as they were, and reads the instance again when
/// not; a file it cannot read is passed over.
@Suite(.tags(.medium)) struct ServeRowCacheTests {
    @Test func aRestartedServerTakesKeptRowsOnlyWhileTheirInstanceIsUnchanged() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            let env = ["XDG_CONFIG_HOME": dir.path + "/config", "FLOWDIR_CONFIG": "/dev/null", "XDG_STATE_HOME": dir.path + "/state"]
            try FileManager.default.createDirectory(atPath: dir.path + "/root", withIntermediateDirectories: true)
            let template = RepositoryPaths.root + "/workflows/review-and-render.yaml"
            for (name, title) in [("a", "Alpha"), ("b", "Beta")] {
                #expect(try CommandRunner.flowdir(["new", template, "root/" + name, "--title", title], in: dir.path, environment: env).status == 0)
            }
            let file = dir.path + "/state/flowdir/serve-rows.json"
            func titles(_ serve: ServeCommandTests.ServeProcess) throws -> [String] {
                let r = try CommandRunner.run("/usr/bin/curl", ["-s", "-H", "Authorization: Bearer \(serve.token)", serve.base + "/api/instances?sort=name"])
                let json = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
                return (json?["rows"] as? [[String: Any]] ?? []).compactMap { $0["title"] as? String }
            }
            do {
                let serve = try ServeCommandTests.ServeProcess([dir.path + "/root", "--no-watch"], in: dir.path, environment: env)
                #expect(try titles(serve) == ["Alpha", "Beta"])
                #expect(Eventually.blockingUntil(timeout: .seconds(20), every: .milliseconds(20)) { FileManager.default.fileExists(atPath: file) },
                        "the rows are kept")
            }
            var st = stat()
            #expect(stat(file, &st) == 0 && st.st_mode & 0o077 == 0, "only its owner reads it")
            // Behind the server's back: the kept row of Alpha says something else (its stamps still match),
            // and Beta changes (a commit: its index moves).
            let kept = try String(contentsOfFile: file, encoding: .utf8)
            #expect(kept.contains("\"Alpha\""))
            try kept.replacingOccurrences(of: "\"Alpha\"", with: "\"Alpha, as kept\"").write(toFile: file, atomically: false, encoding: .utf8)
            #expect(try CommandRunner.flowdir(["archive", "root/b"], in: dir.path, environment: env).status == 0)
            do {
                let serve = try ServeCommandTests.ServeProcess([dir.path + "/root", "--no-watch"], in: dir.path, environment: env)
                #expect(try titles(serve) == ["Alpha, as kept"], "Alpha's row is the one kept; Beta was read again (archived, not listed)")
                // The detail is read from the instance itself, whatever the list kept.
                let r = try CommandRunner.run("/usr/bin/curl", ["-s", "-H", "Authorization: Bearer \(serve.token)", serve.base + "/api/instances?archived=1&sort=name"])
                #expect(r.stdout.contains("\"Beta\"") && r.stdout.contains("\"archived\":true"), "\(r.stdout)")
            }
            // A file it cannot read is passed over: every instance is read.
            try "not json".write(toFile: file, atomically: false, encoding: .utf8)
            let serve = try ServeCommandTests.ServeProcess([dir.path + "/root", "--no-watch"], in: dir.path, environment: env)
            #expect(try titles(serve) == ["Alpha"])
        }
    }
}
