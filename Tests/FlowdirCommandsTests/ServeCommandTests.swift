#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirTestSupport
import Foundation
import Testing

/// `flowdir serve` as a person starts it: the built binary, the watcher in
/// it, a real instance; its API through curl. What a page does is what the
/// commands do: the same checks, the same commits, by the person.
@Suite(.serialized, .tags(.large), Tier.notQuick) struct ServeCommandTests {
    /// `flowdir serve` of the built binary, on a free port: the URL it
    /// printed; stopped when let go. Its stderr goes to `log` (else nowhere).
    final class ServeProcess: @unchecked Sendable {
        let process = Process()
        let output = Pipe()
        let base: String
        let token: String
        var url: String { base + "/?token=" + token }

        init(_ arguments: [String], in directory: String, environment: [String: String], log: String? = nil) throws {
            process.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
            process.arguments = ["serve", "--port", "0"] + arguments
            process.currentDirectoryURL = URL(fileURLWithPath: directory)
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            process.standardOutput = output
            if let log { FileManager.default.createFile(atPath: log, contents: nil) }
            process.standardError = FileHandle(forWritingAtPath: log ?? "/dev/null")
            try process.run()
            var line = ""
            let deadline = Date().addingTimeInterval(30)
            while !line.contains("\n"), Date() < deadline {
                let data = output.fileHandleForReading.availableData
                if data.isEmpty { break }
                line += String(decoding: data, as: UTF8.self)
            }
            let url = try #require(line.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })
            let parts = url.components(separatedBy: "/?token=")
            base = parts[0]
            token = parts.count > 1 ? parts[1] : ""
        }

        deinit {
            process.terminate()
            process.waitUntilExit()
        }
    }

    final class Served: @unchecked Sendable {
        let dir: TemporaryDirectory
        let env: [String: String]
        let server: ServeProcess
        var base: String { server.base }
        var token: String { server.token }

        init(_ extra: [String] = [], template: String = "workflows/review-and-render.yaml", config: String? = nil) throws {
            dir = try TemporaryDirectory()
            if let config { try dir.write("config.yaml", config) }
            env = ["XDG_CONFIG_HOME": dir.path + "/config", "FLOWDIR_CONFIG": config == nil ? "/dev/null" : dir.path + "/config.yaml",
                   "XDG_STATE_HOME": dir.path + "/state"]
            try FileManager.default.createDirectory(atPath: dir.path + "/root", withIntermediateDirectories: true)
            #expect(try CommandRunner.flowdir(["new", RepositoryPaths.root + "/" + template, "root/rr"], in: dir.path, environment: env).status == 0)
            server = try ServeProcess([dir.path + "/root"] + extra, in: dir.path, environment: env)
        }

        var instance: String { dir.path + "/root/rr" }

        /// curl, as a script calls the API: the Bearer token, and a change
        /// as JSON (`headers` replace both): the status, then the body.
        func call(_ method: String, _ path: String, _ body: String? = nil, token: String? = nil,
                  headers: [String]? = nil) throws -> (status: Int, body: String) {
            var args = ["-s", "-X", method, "-w", "\n%{http_code}", base + path]
            for h in headers ?? ["Authorization: Bearer \(token ?? self.token)"] + (method == "GET" ? [] : ["Content-Type: application/json"]) {
                args += ["-H", h]
            }
            if let body {
                try body.write(toFile: dir.path + "/body.json", atomically: true, encoding: .utf8)
                args += ["--data-binary", "@" + dir.path + "/body.json"]
            }
            let r = try CommandRunner.run("/usr/bin/curl", args)
            let lines = r.stdout.split(separator: "\n", omittingEmptySubsequences: false)
            return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
        }

        func id() throws -> String {
            let json = try JSONSerialization.jsonObject(with: Data(try call("GET", "/api/instances").body.utf8)) as? [String: Any]
            return try #require(((json?["rows"] as? [[String: Any]])?.first?["id"]) as? String)
        }

        /// The repository's templates and tools in the root's `workflows/`, where serve offers them.
        func offerTemplates() throws {
            try FileManager.default.createDirectory(atPath: dir.path + "/root/workflows", withIntermediateDirectories: true)
            for name in ["stylize-with-mask.jsonc", "review-and-render.yaml", "tools"] {
                try FileManager.default.copyItem(atPath: RepositoryPaths.root + "/workflows/" + name, toPath: dir.path + "/root/workflows/" + name)
            }
        }

        func templates() throws -> [[String: Any]] {
            let json = try JSONSerialization.jsonObject(with: Data(try call("GET", "/api/templates").body.utf8)) as? [String: Any]
            return json?["templates"] as? [[String: Any]] ?? []
        }

        func state(_ node: String) -> String {
            (try? String(contentsOfFile: instance + "/nodes/\(node)/state.yaml", encoding: .utf8)) ?? ""
        }

        func waitFor(_ what: String, timeout: Double = 20, _ condition: () -> Bool) {
            if Eventually.blockingUntil(timeout: .seconds(timeout), every: .milliseconds(50), condition) { return }
            Issue.record("timed out waiting for \(what)")
        }
    }

    @Test func aPagesAnswersRunTheWorkflowAndEachCommitIsThePersons() async throws {
        try await offPool {
            // A hook hears of the workflow's end with the page that shows it.
            let s = try Served(config: "notifications: false\nhooks:\n  done: [sh, -c, 'echo \"$FLOWDIR_URL\" >> ../../hook.txt']\n")
            let id = try s.id()
            #expect(try s.call("GET", "/api/instances", token: "wrong").status == 401)
            let photo = try Data(contentsOf: URL(fileURLWithPath: RepositoryPaths.root + "/workflows/photo.png")).base64EncodedString()
            let picked = try s.call("POST", "/api/instances/\(id)/nodes/pick/answer",
                                    #"{"files":[{"port":"image","name":"photo.png","base64":"\#(photo)"}]}"#)
            #expect(picked.status == 200 && picked.body.contains("Answered 'pick'"), "\(picked)")
            // A refusal keeps the command's words: a choice that is not offered.
            let wrong = try s.call("POST", "/api/instances/\(id)/nodes/look/answer", #"{"choice":"sepia"}"#)
            #expect(wrong.status == 409 && wrong.body.contains("sepia"), "\(wrong)")
            #expect(try s.call("POST", "/api/instances/\(id)/nodes/look/answer", #"{"choice":"cool"}"#).status == 200)
            let approved = try s.call("POST", "/api/instances/\(id)/nodes/settings/answer", #"{"approve":true,"params":{"width":800}}"#)
            #expect(approved.status == 200, "\(approved)")
            s.waitFor("render to finish") { s.state("render").contains("state: succeeded") }
            #expect(s.state("render").contains("state: succeeded"), "\(s.state("render"))\n\(s.state("pick"))\n\(s.state("look"))\n\(s.state("settings"))")
            let authors = try GitCLI.run(["log", "--format=%an|%s"], in: s.instance)
            let person = try GitCLI.run(["log", "-1", "--format=%an", "--grep=Answer pick"], in: s.instance).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(!person.isEmpty && person != "flowdir", "\(authors)")
            #expect(authors.contains("\(person)|Answer look (cool)"), "\(authors)")
            s.waitFor("the done hook") { FileManager.default.fileExists(atPath: s.dir.path + "/hook.txt") }
            let url = (try? String(contentsOfFile: s.dir.path + "/hook.txt", encoding: .utf8)) ?? ""
            #expect(url == "\(s.base)/?token=\(s.token)#/w/\(id)\n", "\(url)")
            // While it runs, a watcher elsewhere finds it (for its own notifications), and only then.
            let registered = (try? String(contentsOfFile: s.dir.path + "/state/flowdir/serve.yaml", encoding: .utf8)) ?? ""
            #expect(registered.contains("url: \(s.base)") && registered.contains("token: \(s.token)"), "\(registered)")
        }
    }

    /// A run's output is served by its record (the run history's views):
    /// a history whose output is a link to a file outside the instance
    /// (a hostile clone) gets the link's own text from git, never that file.
    @Test func aRunsOutputIsNeverReadThroughALinkOutOfTheInstance() async throws {
        try await offPool {
            let s = try Served(["--no-watch"])
            let id = try s.id()
            try s.dir.write("secret.txt", "the secret\n")
            try FileManager.default.createDirectory(atPath: s.instance + "/nodes/look/out", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: s.instance + "/nodes/look/out/evil.png", withDestinationPath: s.dir.path + "/secret.txt")
            _ = try GitCLI.run(["add", "-A"], in: s.instance)
            _ = try GitCLI.run(["commit", "-qm", "a link out"], in: s.instance)
            let blob = try GitCLI.run(["rev-parse", "HEAD:nodes/look/out/evil.png"], in: s.instance).trimmingCharacters(in: .whitespacesAndNewlines)
            try s.dir.write("root/rr/nodes/look/runs/9/run.yaml", """
                run: 9
                node: look
                kind: Choice
                trigger: auto
                params: {}
                inputs: {}
                outputs:
                  image:
                    blob: \(blob)
                    size: 11
                    type: ImageRef
                    file: out/evil.png
                command: []
                startedAt: 2026-11-28T19:22:05Z
                host: vm
                user: root
                """)
            let r = try s.call("GET", "/api/instances/\(id)/nodes/look/runs/9/outputs/image")
            #expect(r.status == 200 && !r.body.contains("the secret"), "\(r)")
            #expect(r.body.contains("secret.txt"), "the link's own text, from git: \(r)")
            #expect(try s.call("GET", "/api/instances/\(id)/nodes/look/runs/8/outputs/image").status == 404)
        }
    }

    @Test func aParamsEditIsWrittenCheckedAndCommittedAsThePersons() async throws {
        try await offPool {
            let s = try Served()
            let id = try s.id()
            let saved = try s.call("PUT", "/api/instances/\(id)/nodes/render/params", #"{"params":{"sharpen":1.5}}"#)
            #expect(saved.status == 200 && saved.body.contains("sharpen=1.5"), "\(saved)")
            #expect(try String(contentsOfFile: s.instance + "/nodes/render/params.yaml", encoding: .utf8).contains("sharpen: 1.5"))
            s.waitFor("the edit's commit") {
                ((try? GitCLI.run(["log", "-1", "--format=%s"], in: s.instance)) ?? "").contains("params")
            }
            #expect(try GitCLI.run(["log", "-1", "--format=%an"], in: s.instance).trimmingCharacters(in: .whitespacesAndNewlines) != "flowdir")
            // Out of the schema's range: refused with the check's words, and the file is as it was.
            let refused = try s.call("PUT", "/api/instances/\(id)/nodes/render/params", #"{"params":{"sharpen":50}}"#)
            #expect(refused.status == 422 && refused.body.contains("above the maximum 5"), "\(refused)")
            #expect(try String(contentsOfFile: s.instance + "/nodes/render/params.yaml", encoding: .utf8).contains("sharpen: 1.5"))
        }
    }

    @Test func duplicateArchiveDeleteAndNewFromTemplate() async throws {
        try await offPool {
            let s = try Served()
            let id = try s.id()
            let copy = try s.call("POST", "/api/instances/\(id)/duplicate", #"{"name":"Second look"}"#)
            #expect(copy.status == 200 && copy.body.contains("Second look"), "\(copy)")
            #expect(FileManager.default.fileExists(atPath: s.dir.path + "/root/second-look/instance.yaml"))
            #expect(try s.call("POST", "/api/instances/\(id)/archive", #"{"archived":true}"#).status == 200)
            #expect(try s.call("GET", "/api/instances").body.contains("Second look"))
            #expect(!(try s.call("GET", "/api/instances").body.contains("\"id\":\"\(id)\"")))
            #expect(try s.call("GET", "/api/instances?archived=1").body.contains("\"id\":\"\(id)\""))
            try s.offerTemplates()
            let offered = try s.templates()
            let stylize = try #require(offered.first { $0["name"] as? String == "Stylize with user mask" })
            let made = try s.call("POST", "/api/new", #"{"template":"\#(stylize["id"] as? String ?? "")","name":"Masked"}"#)
            #expect(made.status == 200 && made.body.contains("\"id\""), "\(made)")
            // By name too.
            #expect(try s.call("POST", "/api/new", #"{"template":"Review and render"}"#).status == 200)
            #expect(FileManager.default.fileExists(atPath: s.dir.path + "/root/masked/instance.yaml"))
            #expect(try s.call("DELETE", "/api/instances/\(id)").status == 200)
            #expect(!FileManager.default.fileExists(atPath: s.instance))
            #expect(try s.call("GET", "/api/instances/\(id)").status == 404)
        }
    }

    /// Run all ready: the watcher in serve runs steps as they become ready
    /// (it says so); served without one, `flowdir run` runs the instance.
    @Test func runAllReadyWithAndWithoutTheWatcher() async throws {
        try await offPool {
            let watched = try Served()
            let said = try watched.call("POST", "/api/instances/\(try watched.id())/run")
            #expect(said.status == 200 && said.body.contains("this flowdir serve") && said.body.contains("ready"), "\(said)")

            let alone = try Served(["--no-watch"], template: "examples/stylize-auto.yaml")
            let ran = try alone.call("POST", "/api/instances/\(try alone.id())/run")
            #expect(ran.status == 200 && ran.body.contains("flowdir run"), "\(ran)")
            alone.waitFor("the instance to finish", timeout: 60) { alone.state("compress1").contains("state: succeeded") }
        }
    }

    /// A card's Run: one step, when it is ready; refused, naming the inputs
    /// it still needs, when not; the detail lists those (`missing`) for the
    /// page's disabled Run.
    @Test func aCardsRunRunsThatStepOnlyAndNamesWhatItStillNeeds() async throws {
        try await offPool {
            let s = try Served(["--no-watch"], template: "examples/stylize-auto.yaml")
            let id = try s.id()
            func missing(_ node: String) throws -> [String] {
                let json = try JSONSerialization.jsonObject(with: Data(try s.call("GET", "/api/instances/\(id)").body.utf8)) as? [String: Any]
                let card = (json?["nodes"] as? [[String: Any]])?.first { $0["id"] as? String == node }
                return card?["missing"] as? [String] ?? ["?"]
            }
            #expect(try missing("stylize1") == ["image", "mask"])
            let refused = try s.call("POST", "/api/instances/\(id)/nodes/stylize1/run")
            #expect(refused.status == 409 && refused.body.contains("still needs 'image' from 'load1', 'mask' from 'mask1'"), "\(refused)")
            let ran = try s.call("POST", "/api/instances/\(id)/nodes/load1/run")
            #expect(ran.status == 200 && ran.body.contains("Running 'load1'"), "\(ran)")
            s.waitFor("load1 to succeed", timeout: 60) { s.state("load1").contains("state: succeeded") }
            #expect(try missing("stylize1") == ["mask"])
            #expect(!s.state("mask1").contains("state: succeeded"), "only the step asked for ran")
        }
    }

    @Test func aNonLoopbackAddressNeedsATokenFileWhichIsKept() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            let env = ["FLOWDIR_CONFIG": "/dev/null", "XDG_STATE_HOME": dir.path + "/state"]
            let refused = try CommandRunner.flowdir(["serve", dir.path, "--host", "0.0.0.0", "--port", "0"], in: dir.path, environment: env)
            #expect(refused.status == 64 && refused.stderr.contains("--token-file"), "\(refused.stderr)")
            let s = try Served(["--token-file", "token"])
            let kept = try String(contentsOfFile: s.dir.path + "/token", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(kept == s.token && kept.count >= 32)
            var st = stat()
            stat(s.dir.path + "/token", &st)
            #expect(st.st_mode & 0o777 == 0o600)
        }
    }

    /// `/api/new` makes instances only of the templates serve lists, by id
    /// or name; a path names nothing, and no error shows a file's lines.
    @Test func newTakesOnlyTheTemplatesItOffersAndQuotesNoFile() async throws {
        try await offPool {
            let s = try Served()
            try s.offerTemplates()
            try s.dir.write("root/workflows/broken.yaml", "name: Broken\nsecret-line: hunter2-do-not-show\nnodes: [ {\n")
            try s.dir.write("secret.yaml", "schema: app.workflow/v2\nname: Not offered\nnodes: []\n# hunter2-do-not-show\n")
            for template in ["/etc/passwd", "/etc/shadow", "../../../../etc/passwd", s.dir.path + "/secret.yaml",
                             RepositoryPaths.root + "/workflows/stylize-with-mask.jsonc", "file:///etc/passwd", ""] {
                let r = try s.call("POST", "/api/new", #"{"template":"\#(template)"}"#)
                #expect(r.status == 404 || r.status == 400, "\(template): \(r)")
                #expect(!r.body.contains("root:") && !r.body.contains("hunter2"), "\(template): \(r.body)")
            }
            let broken = try s.call("POST", "/api/new", #"{"template":"broken"}"#)
            #expect(broken.status == 422 && broken.body.contains("flowdir check") && !broken.body.contains("hunter2"), "\(broken)")
            let entries = try FileManager.default.contentsOfDirectory(atPath: s.dir.path + "/root").filter { !$0.hasPrefix(".") }.sorted()
            #expect(entries == ["rr", "workflows"], "\(entries)")
        }
    }

    /// A title from a page is a value, never an argument: `--help` is a name.
    @Test func aTitleThatLooksLikeAnOptionIsOnlyATitle() async throws {
        try await offPool {
            let s = try Served()
            let id = try s.id()
            for name in ["--help", "--yes", "-h"] {
                let copy = try s.call("POST", "/api/instances/\(id)/duplicate", #"{"name":"\#(name)"}"#)
                #expect(copy.status == 200 && copy.body.contains("'\(name)'"), "\(name): \(copy)")
            }
            #expect(try s.call("GET", "/api/instances").body.contains("\"title\":\"--help\""))
        }
    }

    /// Through the real binary: a change needs JSON, and from outside a
    /// page the Bearer token (the cookie a browser holds is not enough).
    @Test func aChangeNeedsJSONAndFromAScriptTheBearerToken() async throws {
        try await offPool {
            let s = try Served()
            let id = try s.id()
            let path = "/api/instances/\(id)/nodes/look/snooze"
            let cookie = "Cookie: flowdir_token=\(s.token)"
            s.waitFor("look to ask") { s.state("look").contains("awaitingUser") }
            let snoozed = { (try? s.call("GET", "/api/inbox").body.contains("snoozedUntil\":\"")) ?? false }
            #expect(try s.call("POST", path, "{}", headers: [cookie, "Content-Type: application/json"]).status == 401)
            #expect(try s.call("POST", path, "{}", headers: ["Authorization: Bearer \(s.token)", "Content-Type: text/plain"]).status == 415)
            #expect(try s.call("POST", path, "{}", headers: [cookie, "Content-Type: application/json", "Origin: http://127.0.0.1:1"]).status == 403)
            #expect(!snoozed())
            let own = try s.call("POST", path, #"{"seconds":60}"#, headers: [cookie, "Content-Type: application/json", "Origin: \(s.base)"])
            #expect(own.status == 200, "\(own)")
            #expect(snoozed())
        }
    }

    @Test func aTokenFileOthersCanReadOrAWeakOneIsRefused() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            let env = ["FLOWDIR_CONFIG": "/dev/null", "XDG_STATE_HOME": dir.path + "/state"]
            try dir.write("open", "a-token-that-is-long-enough-0123456789")
            chmod(dir.path + "/open", 0o644)
            // Refused at once; `timeout` only stops a server that would serve with it.
            let serve = { (file: String) in
                try CommandRunner.run("/usr/bin/timeout", ["60", RepositoryPaths.flowdirExecutable, "serve", dir.path, "--port", "0", "--token-file", file],
                                      in: dir.path, environment: env)
            }
            let open = try serve(dir.path + "/open")
            #expect(open.status == 64 && open.stderr.contains("can be read or changed by others") && open.stderr.contains("chmod 600"), "\(open.stderr)")
            try dir.write("weak", "aaaaaaaaaaaaaaaaaaaaaaaa")
            chmod(dir.path + "/weak", 0o600)
            let weak = try serve(dir.path + "/weak")
            #expect(weak.status == 64 && weak.stderr.contains("too easy to guess"), "\(weak.stderr)")
        }
    }
}
