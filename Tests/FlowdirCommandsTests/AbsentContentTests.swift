import FlowdirTestSupport
import Foundation
import Testing

/// A large output whose content is not on this machine — a clone holds its
/// pointer until `flowdir storage get` (docs/storage.md) — is shown by
/// `flowdir show` and the pages as "not on this machine (1.5 MB)" with how
/// to get it: never its pointer text as the file, never a thumbnail.
@Suite(.tags(.large), Tier.notQuick) struct AbsentContentTests {
    @Test func showAndThePagesSayWhatIsNotOnThisMachineAndHowToGetIt() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            let env = ["XDG_CONFIG_HOME": dir.path + "/config", "FLOWDIR_CONFIG": "/dev/null", "XDG_STATE_HOME": dir.path + "/state", "TERM": "dumb"]
            func flowdir(_ args: [String]) throws -> CommandResult { try CommandRunner.flowdir(args, in: dir.path, environment: env) }
            // A PNG of noise: an image, and large (kept beside git).
            try dir.write("wf/tools/Noise.yaml", """
                kind: Noise
                outputs: { image: ImageRef }
                run:
                  command: [convert, -size, 700x700, "xc:", +noise, Random, "png:{outputs.image}"]
                """)
            try dir.write("wf/t.yaml", "schema: app.workflow/v2\nname: Noise\nnodes:\n  - { id: noise, kind: Noise }\n")
            #expect(try flowdir(["new", "wf/t.yaml", "a"]).status == 0)
            let hub = dir.path + "/hub.git"
            _ = try CommandRunner.run("/usr/bin/git", ["init", "--quiet", "--bare", "--initial-branch=main", hub])
            _ = try GitCLI.run(["remote", "add", "origin", "file://" + hub], in: dir.path + "/a")
            let ran = try flowdir(["run", "a"])
            #expect(ran.status == 0, "\(ran.stdout)\(ran.stderr)")
            #expect(try flowdir(["sync", "a"]).status == 0)
            // B: a clone, its output a pointer until it is fetched.
            try FileManager.default.createDirectory(atPath: dir.path + "/root", withIntermediateDirectories: true)
            #expect(try flowdir(["clone", "file://" + hub, "root/b"]).status == 0)
            let file = dir.path + "/root/b/nodes/noise/out/image.png"
            let size = try #require(try FileManager.default.attributesOfItem(atPath: dir.path + "/a/nodes/noise/out/image.png")[.size] as? Int)
            let words = "not on this machine (\(String(format: "%.1f", Double(size) / 1_048_576)) MB)"
            #expect(try String(contentsOfFile: file, encoding: .utf8).hasPrefix("version https://git-lfs.github.com/spec/v1"))

            let text = try flowdir(["show", "root/b"])
            #expect(text.status == 0, "\(text.stderr)")
            #expect(text.stdout.contains("out/image.png " + words), "\(text.stdout)")
            #expect(text.stdout.contains("get it with `flowdir storage get root/b/noise`"), "\(text.stdout)")
            let shown = try JSONSerialization.jsonObject(with: Data(try flowdir(["show", "root/b", "--json"]).stdout.utf8)) as? [String: Any]
            let card = try #require((shown?["nodes"] as? [[String: Any]])?.first)
            let made = try #require(((card["lastRun"] as? [String: Any])?["outputs"] as? [[String: Any]])?.first)
            #expect(made["absent"] as? String == words && made["get"] as? String == "flowdir storage get root/b/noise", "\(made)")

            // The pages: the tile says so, with no thumbnail; the file is not its pointer; the list has no thumbnail of it.
            let serve = try ServeCommandTests.ServeProcess([dir.path + "/root"], in: dir.path, environment: env)
            func get(_ path: String) throws -> (status: Int, body: String) {
                let r = try CommandRunner.run("/usr/bin/curl", ["-s", "-w", "\n%{http_code}", "-H", "Authorization: Bearer \(serve.token)", serve.base + path])
                let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
                return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
            }
            let rows = try JSONSerialization.jsonObject(with: Data(try get("/api/instances").body.utf8)) as? [String: Any]
            let row = try #require((rows?["rows"] as? [[String: Any]])?.first)
            #expect(row["thumb"] is NSNull || row["thumb"] == nil, "\(row)")
            let id = try #require(row["id"] as? String)
            func output() throws -> [String: Any] {
                let detail = try JSONSerialization.jsonObject(with: Data(try get("/api/instances/\(id)").body.utf8)) as? [String: Any]
                return try #require(((detail?["nodes"] as? [[String: Any]])?.first?["outputs"] as? [[String: Any]])?.first)
            }
            let tile = try output()
            #expect(tile["absent"] as? String == words && (tile["get"] as? String)?.hasSuffix("/root/b/noise") == true, "\(tile)")
            #expect(tile["thumb"] is NSNull || tile["thumb"] == nil, "\(tile)")
            let served = try get(try #require(tile["url"] as? String))
            #expect(served.status == 404 && served.body.contains(words) && !served.body.contains("git-lfs"), "\(served)")

            // Once fetched, the file is itself again, with its thumbnail.
            let got = try flowdir(["storage", "get", "root/b"])
            #expect(got.status == 0, "\(got.stdout)\(got.stderr)")
            #expect(!(try flowdir(["show", "root/b"]).stdout.contains("not on this machine")))
            let back = try output()
            #expect(back["absent"] == nil && back["thumb"] is String, "\(back)")
            let image = try CommandRunner.run("/usr/bin/curl", ["-s", "-o", dir.path + "/got.png", "-w", "%{http_code} %{content_type}",
                                                                "-H", "Authorization: Bearer \(serve.token)", serve.base + (try #require(back["url"] as? String))])
            #expect(image.stdout == "200 image/png", "\(image.stdout)")
            withExtendedLifetime(serve) {}
        }
    }
}
