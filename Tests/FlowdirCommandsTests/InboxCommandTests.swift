import FlowdirCore
import FlowdirIO
import FlowdirTemplates
import FlowdirTestSupport
import Foundation
import Testing

/// Awaits through `inbox/` end to end (docs/instance-folder.md): the built binary,
/// real files dropped with mv and cp, real git. Time is fixed with
/// FLOWDIR_NOW, so expiry, snooze and claims are checked to the second.
@Suite(.tags(.large), Tier.notQuick) struct InboxCommandTests {
    static let t0 = "2026-11-22T10:00:00Z"

    /// A folder with a config (small answer limit, optional hooks) and a template.
    final class Setup: @unchecked Sendable {
        let dir: TemporaryDirectory
        var env: [String: String]
        var inst: String { dir.path + "/inst" }

        init(template: String, config: String = "", now: String = InboxCommandTests.t0) throws {
            dir = try TemporaryDirectory()
            try dir.write("config.yaml", "answerSizeLimit: 1KB\nnotifications: false\n" + config)
            try dir.write("wf/t.yaml", template)
            env = ["XDG_CONFIG_HOME": "/nonexistent", "FLOWDIR_CONFIG": dir.path + "/config.yaml", "FLOWDIR_NOW": now,
                   "XDG_STATE_HOME": dir.path + "/state"]
            let r = try flowdir(["new", "wf/t.yaml", "inst"])
            #expect(r.status == 0, "\(r.stderr)")
            try GitCLI.run(["config", "user.name", "Ann"], in: inst)
            try GitCLI.run(["config", "user.email", "ann@example.org"], in: inst)
        }

        @discardableResult
        func flowdir(_ args: [String], at now: String? = nil) throws -> CommandResult {
            var e = env
            if let now { e["FLOWDIR_NOW"] = now }
            return try CommandRunner.flowdir(args, in: dir.path, environment: e)
        }

        func write(_ rel: String, _ bytes: [UInt8]) throws {
            try Data(bytes).write(to: URL(fileURLWithPath: inst + "/" + rel))
        }

        func text(_ rel: String) throws -> String { try String(contentsOfFile: inst + "/" + rel, encoding: .utf8) }
        func exists(_ rel: String) -> Bool { FileManager.default.fileExists(atPath: inst + "/" + rel) }

        func state(_ node: String) throws -> String { InstanceProbe.state(inst, node) }

        func commits(_ event: String) throws -> Int { try InstanceProbe.commits(inst, event: event) }
    }

    static let ask = """
        schema: app.workflow/v2
        name: Ask
        nodes:
          - id: pick
            kind: UserAssetPicker
            outputs: { image: ImageRef }
          - id: mask
            kind: UserMaskEditor
            inputs: { image: ImageRef }
            outputs: { mask: MaskRef }
            await: { type: draw_mask, expiresIn: 1h, resumePolicy: { onTimeout: cancel } }
        edges: [pick.image -> mask.image]
        """

    // MARK: The seed's workflow

    @Test func theSeedWaitsForThePhotoAndTheMaskThenFinishes() async throws {
        try await offPool { try self.seedRun() }
    }

    func seedRun() throws {
        let dir = try TemporaryDirectory()
        // Its stylize step goes to a job API: a job server running the local stylize tool as flowdir/stylize.
        let server = try JobServerProcess(dir: dir.path + "/jobserver", arguments: [
            "--tools", RepositoryPaths.workflows + "/tools", "--model", "flowdir/stylize=tools/StylizeLocal"])
        try dir.write("config.yaml", "endpoints:\n  gpu: { url: \(server.url), pollInterval: 0.2s }\n")
        let env = ["XDG_CONFIG_HOME": "/nonexistent", "FLOWDIR_CONFIG": dir.path + "/config.yaml", "XDG_STATE_HOME": dir.path + "/state",
                   "FLOWDIR_TOKEN_GPU": server.token]
        func flowdir(_ args: [String]) throws -> CommandResult { try CommandRunner.flowdir(args, in: dir.path, environment: env) }
        #expect(try flowdir(["new", RepositoryPaths.workflows + "/stylize-with-mask.jsonc", "photo"]).status == 0)
        let inst = dir.path + "/photo"
        try GitCLI.run(["config", "user.name", "Ann"], in: inst)
        try GitCLI.run(["config", "user.email", "ann@example.org"], in: inst)
        func commits(_ event: String) throws -> Int { try InstanceProbe.commits(inst, event: event) }

        var r = try flowdir(["run", "photo"])
        #expect(r.status == 2, "\(r.stderr)")
        #expect(r.stdout.contains("Answer: save an image (PNG, JPEG or WebP) as inbox/load1.image.png  (or: flowdir answer photo/load1 FILE)"))
        let question = try String(contentsOfFile: inst + "/inbox/load1.await.yaml", encoding: .utf8)
        #expect(question.hasPrefix("# Pick a file for load1\n# Answer: save an image"))
        #expect(question.contains("type: select_asset"))
        #expect(question.contains("link: flowdir://"))
        #expect(!FileManager.default.fileExists(atPath: inst + "/inbox/mask1.await.yaml"))

        // The photo: written elsewhere, then moved in.
        let photo = dir.path + "/elsewhere.png"
        try FileManager.default.copyItem(atPath: RepositoryPaths.workflows + "/photo.png", toPath: photo)
        try FileManager.default.moveItem(atPath: photo, toPath: inst + "/inbox/load1.image.png")
        r = try flowdir(["run", "photo"])
        #expect(r.status == 2, "\(r.stderr)")
        #expect(try commits("answer") == 1)
        #expect(FileManager.default.fileExists(atPath: inst + "/inbox/mask1.await.yaml"))
        let maskQuestion = try String(contentsOfFile: inst + "/inbox/mask1.await.yaml", encoding: .utf8)
        #expect(maskQuestion.hasPrefix("# Draw a mask — Mask the subject for the next step.\n# Answer: save a PNG as inbox/mask1.mask.png  (or: flowdir answer photo/mask1 FILE)\n"))
        #expect(maskQuestion.contains("image: nodes/load1/out/image.png"))
        try GitCLI.expectHealthy(inst)

        // The mask: copied straight into place.
        _ = try CommandRunner.run("/usr/bin/convert", ["-size", "64x64", "xc:white", dir.path + "/mask.png"])
        try FileManager.default.copyItem(atPath: dir.path + "/mask.png", toPath: inst + "/inbox/mask1.mask.png")
        r = try flowdir(["run", "photo"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.hasPrefix("4 succeeded"))
        #expect(try commits("answer") == 2)

        // Provenance: who, when, which file, and the blob of the exact bytes.
        let run = try RunRecordCodecReader.read(inst + "/nodes/mask1/runs/1/run.yaml")
        #expect(run.trigger == .answer)
        #expect(run.user == "Ann <ann@example.org>")
        #expect(run.answer?.files == ["inbox/mask1.mask.png"])
        let blob = try GitCLI.run(["hash-object", dir.path + "/mask.png"], in: inst).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(run.outputs.first?.blob == blob)
        #expect(run.inputs.first?.node == "load1")
        let author = try GitCLI.run(["log", "-1", "--format=%an", "--grep=Answer mask1"], in: inst)
        #expect(author == "Ann\n")
        let done = try FileManager.default.contentsOfDirectory(atPath: inst + "/inbox/done").sorted()
        #expect(done.count == 2 && done[0].hasPrefix("load1-") && done[1].hasPrefix("mask1-"))
        #expect(try String(contentsOfFile: inst + "/inbox/done/" + done[1], encoding: .utf8).contains("outcome: answered"))
        try GitCLI.expectHealthy(inst)
    }

    // MARK: Refusals

    @Test func everyBadAnswerIsRefusedAndKept() async throws {
        try await offPool { try self.badAnswers() }
    }

    func badAnswers() throws {
        let s = try Setup(template: Self.ask)
        #expect(try s.flowdir(["run", "inst"]).status == 2)
        let png = SampleFiles.png()
        let fm = FileManager.default
        let cases: [(name: String, make: () throws -> Void, reason: String)] = [
            ("pick.image.png", { try s.write("inbox/pick.image.png", Array("hello, not an image".utf8)) }, "it is not a valid ImageRef"),
            ("pick.image.png", { try s.write("inbox/pick.image.png", Array(png.dropLast(12))) }, "it is not a valid ImageRef"),
            ("pick.image.png", {
                try s.write("../real.png", png)
                try fm.createSymbolicLink(atPath: s.inst + "/inbox/pick.image.png", withDestinationPath: s.dir.path + "/real.png")
            }, "it is a symbolic link"),
            ("pick.image.png", { try fm.createDirectory(atPath: s.inst + "/inbox/pick.image.png", withIntermediateDirectories: false) },
             "it is a directory"),
            ("pick.image.png", { try s.write("inbox/pick.image.png", []) }, "it is empty"),
            ("pick.image.png", { try s.write("inbox/pick.image.png", SampleFiles.png(width: 64, height: 64)) },
             "more than the 1.0 KiB allowed"),
            ("pick.photo.png", { try s.write("inbox/pick.photo.png", png) }, "'pick' has no port 'photo'"),
            ("pik.image.png", { try s.write("inbox/pik.image.png", png) }, "there is no node 'pik'"),
        ]
        for (i, c) in cases.enumerated() {
            let earlier = try fm.contentsOfDirectory(atPath: s.inst + "/inbox").filter { $0.hasPrefix(c.name) && $0.hasSuffix(".rejected") }
            try c.make()
            let before = try? Data(contentsOf: URL(fileURLWithPath: s.inst + "/inbox/" + c.name))
            let r = try s.flowdir(["run", "inst"])
            #expect(r.status == 2, "case \(i): \(r.stderr)")
            #expect(r.stdout.contains("refused inbox/\(c.name) — "), "case \(i): run says so: \(r.stdout)")
            #expect(try s.state("pick") == "awaitingUser", "case \(i)")
            #expect(s.exists("inbox/pick.await.yaml"), "case \(i)")
            #expect(!s.exists("inbox/" + c.name), "case \(i)")
            // Kept, byte for byte, beside a note that says why.
            let kept = try fm.contentsOfDirectory(atPath: s.inst + "/inbox").filter {
                $0.hasPrefix(c.name) && $0.hasSuffix(".rejected") && !earlier.contains($0)
            }
            #expect(kept == [earlier.isEmpty ? c.name + ".rejected" : "\(c.name).\(earlier.count + 1).rejected"], "case \(i): \(kept)")
            if let before, let k = kept.first { #expect(try Data(contentsOf: URL(fileURLWithPath: s.inst + "/inbox/" + k)) == before) }
            let note = c.name.hasPrefix("pik") ? "inbox/pik.error.txt" : "inbox/pick.error.txt"
            let why = try s.text(note)
            #expect(why.contains(c.reason), "case \(i): \(why)")
            #expect(why.contains("It is kept as inbox/\(kept.first ?? "?")"), "case \(i): \(why)")
            try GitCLI.expectHealthy(s.inst)
            // The set-aside files stay, and are left alone from now on.
            for name in try fm.contentsOfDirectory(atPath: s.inst + "/inbox") where name.hasSuffix(".rejected") {
                #expect(fm.fileExists(atPath: s.inst + "/inbox/" + name))
            }
        }
        #expect(try s.commits("reject") == cases.count)
        // A good answer still goes through, and takes the note away.
        try s.write("inbox/pick.image.png", png)
        #expect(try s.flowdir(["run", "inst"]).status == 2)
        #expect(try s.state("pick") == "succeeded")
        #expect(!s.exists("inbox/pick.error.txt"))
        #expect(try s.state("mask") == "awaitingUser")
        try GitCLI.expectHealthy(s.inst)
    }

    // MARK: flowdir answer, claim, snooze, skip

    @Test func answerCommandClaimAndSnooze() async throws {
        try await offPool { try self.answerClaimSnooze() }
    }

    func answerClaimSnooze() throws {
        let s = try Setup(template: Self.ask)
        #expect(try s.flowdir(["run", "inst"]).status == 2)
        try s.write("../photo.png", SampleFiles.png())
        var r = try s.flowdir(["answer", "inst/pick", s.dir.path + "/photo.png"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "Answered 'pick' (inbox/pick.image.png).\n")
        #expect(try s.state("pick") == "succeeded")
        #expect(try s.state("mask") == "awaitingUser")  // asked in the same commit
        #expect(try s.commits("answer") == 1)

        // A wrong file through the command: refused, said so, kept.
        try s.write("../note.txt", Array("text".utf8))
        r = try s.flowdir(["answer", "inst/mask", s.dir.path + "/note.txt"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("inbox/mask.mask.txt was refused: it is not a valid MaskRef"), "\(r.stderr)")

        // Ann claims it; Bob cannot answer until the lease lapses.
        r = try s.flowdir(["claim", "inst/mask"], at: "2026-11-22T10:00:00Z")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "Claimed 'mask' until 2026-11-22T10:05:00Z.\n")
        try GitCLI.run(["config", "user.name", "Bob"], in: s.inst)
        try GitCLI.run(["config", "user.email", "bob@example.org"], in: s.inst)
        r = try s.flowdir(["claim", "inst/mask"], at: "2026-11-22T10:04:59Z")
        #expect(r.status == 1)
        #expect(r.stderr.contains("'mask' is claimed by Ann <ann@example.org> until 2026-11-22T10:05:00Z"))

        // Snoozed five times, not six.
        for i in 1...5 {
            r = try s.flowdir(["snooze", "inst/mask", "--for", "30m"], at: "2026-11-22T10:06:00Z")
            #expect(r.stdout == "Snoozed 'mask' until 2026-11-22T10:36:00Z (\(i) of 5).\n", "\(r.stderr)")
        }
        r = try s.flowdir(["snooze", "inst/mask"], at: "2026-11-22T10:06:00Z")
        #expect(r.status == 1)
        #expect(r.stderr.contains("'mask' has been snoozed 5 times, the most allowed"))
        var list = try s.flowdir(["inbox", "--json"], at: "2026-11-22T10:35:59Z")
        #expect(list.stdout.contains("\"section\" : \"Snoozed\""))
        list = try s.flowdir(["inbox"], at: "2026-11-22T10:36:00Z")
        #expect(list.stdout.contains("Pending (1)"), "\(list.stdout)")
        #expect(list.stdout.contains("mask: Draw a mask for mask"))
        #expect(list.stdout.contains("answer: inst/inbox/mask.mask.png"))
        #expect(list.stdout.contains("Done (1)"))

        // Skip is refused: this await does not allow it.
        r = try s.flowdir(["skip", "inst/mask"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("'mask' cannot be skipped"))

        // Bob answers once Ann's claim has lapsed.
        try s.write("../mask.png", SampleFiles.png())
        r = try s.flowdir(["answer", "inst/mask", s.dir.path + "/mask.png"], at: "2026-11-22T10:05:00Z")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(try s.state("mask") == "succeeded")
        let run = try RunRecordCodecReader.read(s.inst + "/nodes/mask/runs/1/run.yaml")
        #expect(run.user == "Bob <bob@example.org>")
        try GitCLI.expectHealthy(s.inst)
    }

    /// "Replace input…": a person's file in place of what a failed step
    /// should have made, dropped or given to `flowdir answer`; the step it
    /// blocked then runs on it, and the run record says whose it was.
    @Test func aFailedStepsOutputReplacedByAPersonsFileLetsItsConsumerRun() async throws {
        let s = try Setup(template: """
            schema: app.workflow/v2
            name: Replace
            options: { errorPolicy: isolate-node }
            nodes:
              - { id: boom, kind: Boom }
              - { id: after, kind: Copy }
            edges: [boom.image -> after.image]
            """)
        // The tools, then the instance again with them.
        try s.dir.write("wf/tools/Boom.yaml", """
            kind: Boom
            outputs: { image: { type: ImageRef, ext: png } }
            run: { command: [sh, -c, 'echo no paint left >&2; exit 3'] }
            """)
        try s.dir.write("wf/tools/Copy.yaml", """
            kind: Copy
            inputs: { image: ImageRef }
            outputs: { image: { type: ImageRef, ext: png } }
            run: { command: [cp, "{inputs.image}", "{outputs.image}"] }
            """)
        try FileManager.default.removeItem(atPath: s.inst)
        #expect(try s.flowdir(["new", "wf/t.yaml", "inst"]).status == 0)
        try GitCLI.run(["config", "user.name", "Ann"], in: s.inst)
        try GitCLI.run(["config", "user.email", "ann@example.org"], in: s.inst)
        #expect(try s.flowdir(["run", "inst"]).status != 0)
        #expect(try s.state("boom") == "failed")
        // Not a picture: refused and kept, as any answer.
        try s.write("inbox/boom.image.png", Array("not a picture".utf8))
        var r = try s.flowdir(["run", "inst"])
        #expect(s.exists("inbox/boom.image.png.rejected"), "\(r.stdout)\(r.stderr)")
        #expect(try s.state("boom") == "failed")
        let png = SampleFiles.png(width: 3, height: 2)
        try Data(png).write(to: URL(fileURLWithPath: s.dir.path + "/mine.png"))
        r = try s.flowdir(["answer", "inst/boom", "mine.png"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(try s.state("boom") == "succeeded")
        let record = try s.text("nodes/boom/runs/2/run.yaml")
        #expect(record.contains("trigger: answer") && record.contains("inbox/boom.image.png") && record.contains("user: Ann"), "\(record)")
        r = try s.flowdir(["run", "inst"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(try s.state("after") == "succeeded")
        #expect(FileManager.default.contents(atPath: s.inst + "/nodes/after/out/image.png").map { Array($0) } == png, "after ran on the person's file")
        #expect(try GitCLI.run(["status", "--porcelain"], in: s.inst).isEmpty)
        #expect(try GitCLI.run(["log", "-1", "--format=%an", "--", "nodes/boom/runs/2"], in: s.inst).contains("Ann"))
    }

    @Test func skipLetsConsumersOnOptionalPortsGoOn() async throws {
        try await offPool {
            let s = try Setup(template: """
                schema: app.workflow/v2
                name: Skip
                nodes:
                  - id: extra
                    kind: UserAssetPicker
                    outputs: { image: ImageRef }
                    await: { type: select_asset, allowSkip: true }
                  - id: sheet
                    kind: Choice
                    inputs: { image: ImageRef? }
                    outputs: { choice: JSONRef }
                    await: { type: choice, choices: [yes, no] }
                edges: [extra.image -> sheet.image]
                """)
            #expect(try s.flowdir(["run", "inst"]).status == 2)
            #expect(try s.state("sheet") == "blocked")
            let r = try s.flowdir(["skip", "inst/extra"])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(try s.state("extra") == "skipped")
            #expect(try s.state("sheet") == "awaitingUser")
            let sheet = try AwaitCodec.decode(Array(try s.text("inbox/sheet.await.yaml").utf8), file: "sheet.await.yaml").get()
            #expect(sheet.choices == ["yes", "no"])
            try GitCLI.expectHealthy(s.inst)
        }
    }

    // MARK: Answers in the await file

    @Test func choiceAndConfirmationAnsweredInTheirFiles() async throws {
        try await offPool { try self.inFileAnswers() }
    }

    func inFileAnswers() throws {
        let s = try Setup(template: """
            schema: app.workflow/v2
            name: In file
            nodes:
              - id: look
                kind: Choice
                outputs: { choice: JSONRef }
                await: { type: choice, choices: [warm, cool, mono] }
              - id: settings
                kind: ParamConfirm
                params: { width: 1600, quality: 85 }
                outputs: { params: JSONRef }
                await: { type: confirm_params }
            """)
        #expect(try s.flowdir(["run", "inst"]).status == 2)
        // A choice that is not offered: the edit is set aside, the question restored.
        var q = try s.text("inbox/look.await.yaml")
        try s.write("inbox/look.await.yaml", Array((q + "choice: hot\n").utf8))
        #expect(try s.flowdir(["run", "inst"]).status == 2)
        #expect(try s.text("inbox/look.error.txt").contains("'hot' is not one of the choices: warm, cool, mono"))
        #expect(try s.text("inbox/look.await.yaml.rejected").hasSuffix("choice: hot\n"))
        #expect(try s.text("inbox/look.await.yaml") == q)
        try GitCLI.expectHealthy(s.inst)
        q = try s.text("inbox/look.await.yaml")
        try s.write("inbox/look.await.yaml", Array((q + "choice: cool\n").utf8))
        #expect(try s.flowdir(["run", "inst"]).status == 2)
        #expect(try s.state("look") == "succeeded")
        #expect(try s.text("nodes/look/out/choice.json") == "\"cool\"\n")

        // Params edited in the await file, then approved.
        let c = try s.text("inbox/settings.await.yaml")
        #expect(c.contains("params:\n  width: 1600\n  quality: 85\n"))
        try s.write("inbox/settings.await.yaml", Array((c.replacingOccurrences(of: "width: 1600", with: "width: 800") + "approve: true\n").utf8))
        let r = try s.flowdir(["run", "inst"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(try s.text("nodes/settings/out/params.json") == "{\"width\": 800, \"quality\": 85}\n")
        #expect(try s.text("nodes/settings/params.yaml").contains("width: 800"))
        #expect(try s.commits("answer") == 2)
        try GitCLI.expectHealthy(s.inst)
    }

    // MARK: Expiry

    @Test func expiryPerPolicy() async throws {
        try await offPool { try self.expiry() }
    }

    func expiry() throws {
        let s = try Setup(template: """
            schema: app.workflow/v2
            name: Expiry
            nodes:
              - id: c
                kind: UserAssetPicker
                outputs: { image: ImageRef }
                await: { type: select_asset, expiresIn: 1h, onTimeout: cancel }
              - id: s
                kind: UserAssetPicker
                outputs: { image: ImageRef }
                await: { type: select_asset, expiresIn: 1h, onTimeout: skip }
              - id: d
                kind: Choice
                outputs: { choice: JSONRef }
                await: { type: choice, choices: [a, b], default: b, expiresIn: 1h, onTimeout: autoDefault }
            """)
        #expect(try s.flowdir(["run", "inst"]).status == 2)
        #expect(try s.text("inbox/c.await.yaml").contains("expiresAt: 2026-11-22T11:00:00Z"))
        #expect(try s.flowdir(["run", "inst"], at: "2026-11-22T10:59:59Z").status == 2)
        for n in ["c", "s", "d"] { #expect(try s.state(n) == "awaitingUser") }
        let r = try s.flowdir(["run", "inst"], at: "2026-11-22T11:00:00Z")
        #expect(r.status == 1)
        #expect(try s.state("c") == "failed")
        #expect(try s.text("nodes/c/state.yaml").contains("reason: \"Expired: no answer by 2026-11-22T11:00:00Z\""))
        #expect(try s.state("s") == "skipped")
        #expect(try s.state("d") == "succeeded")
        #expect(try s.text("nodes/d/out/choice.json") == "\"b\"\n")
        #expect(try s.commits("expire") == 3)
        let done = try FileManager.default.contentsOfDirectory(atPath: s.inst + "/inbox/done")
        #expect(done.count == 3)
        for f in done { #expect(try s.text("inbox/done/" + f).contains("outcome: expired")) }
        // Done awaits leave after 7 days.
        #expect(try s.flowdir(["run", "inst"], at: "2026-11-29T11:00:01Z").status == 1)
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: s.inst + "/inbox/done")) ?? []).isEmpty)
        try GitCLI.expectHealthy(s.inst)
    }

    // MARK: Links

    @Test func deepLinkRoundTrip() async throws {
        try await offPool { try self.links() }
    }

    func links() throws {
        let s = try Setup(template: Self.ask)
        #expect(try s.flowdir(["run", "inst"]).status == 2)
        let q = try s.text("inbox/pick.await.yaml")
        let link = String(q.split(separator: "\n").first { $0.hasPrefix("link: ") }!.dropFirst(6))
        #expect(link.hasPrefix("flowdir://"))
        // From a cold start elsewhere: found by the instance id under the root.
        var r = try CommandRunner.flowdir(["open", link, "--root", s.dir.path], in: "/", environment: s.env)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasPrefix("Pick a file for pick\ninst/pick · select_asset · normal · added just now\nClaimed 'pick' until 2026-11-22T10:05:00Z.\n"))
        #expect(r.stdout.contains("Answer: save an image (PNG, JPEG or WebP) as inbox/pick.image.png"))
        #expect(try s.text("inbox/pick.await.yaml").contains("claim: { by: Ann <ann@example.org>, until: 2026-11-22T10:05:00Z }\n"))

        r = try s.flowdir(["open", "flowdir://nope"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("'flowdir://nope' is not a flowdir link: the path is not <instance-id>/node/<node>"))
        r = try s.flowdir(["open", "flowdir://0000-unknown/node/pick?await=x1"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("no instance with id 0000-unknown"))

        try s.write("inbox/pick.image.png", SampleFiles.png())
        #expect(try s.flowdir(["run", "inst"]).status == 2)
        r = try s.flowdir(["open", link])
        #expect(r.status == 1)
        #expect(r.stderr.contains("this question was already answered at 2026-11-22T10:00:00Z by Ann <ann@example.org>"), "\(r.stderr)")
    }

    // MARK: Handover

    @Test func anAnswerIsHandedToTheRunThatHoldsTheInstance() async throws {
        try await offPool { try self.handover() }
    }

    func handover() throws {
        let s = try Setup(template: """
            schema: app.workflow/v2
            name: Handover
            nodes:
              - id: slow
                kind: Sleep
              - id: look
                kind: Choice
                outputs: { choice: JSONRef }
                await: { type: choice, choices: [warm, cool] }
            """)
        try s.dir.write("wf/tools/Sleep.yaml", """
            kind: Sleep
            outputs: { out: TextRef }
            run: { command: [sh, -c, 'while [ ! -e "$1" ]; do sleep 0.05; done; echo done > "$0"', "{outputs.out}", "\(s.dir.path)/gate"] }
            """)
        let run = Process()
        run.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
        run.arguments = ["run", "inst"]
        run.currentDirectoryURL = URL(fileURLWithPath: s.dir.path)
        var env = ProcessInfo.processInfo.environment
        for (k, v) in s.env { env[k] = v }
        env["FLOWDIR_NOW"] = nil  // a real clock: the run ticks
        run.environment = env
        #expect(FileManager.default.createFile(atPath: s.dir.path + "/run.log", contents: nil))
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: s.dir.path + "/run.log"))
        run.standardOutput = log
        run.standardError = log
        try run.run()
        Eventually.blockingUntil(timeout: .seconds(60), every: .milliseconds(50)) { s.exists("inbox/look.await.yaml") }
        #expect(s.exists("inbox/look.await.yaml"))
        // The run holds the lock; the answer is handed to it and carried out
        // while slow still runs (it waits for the gate, opened below).
        var e = s.env
        e["FLOWDIR_NOW"] = nil
        let r = try CommandRunner.flowdir(["answer", "inst/look", "--choice", "cool"], in: s.dir.path, environment: e)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "Answered 'look': cool.\n")
        Eventually.blockingUntil(timeout: .seconds(60), every: .milliseconds(20)) { (try? s.state("look")) == "succeeded" }
        #expect(try s.state("look") == "succeeded")
        #expect(try s.state("slow") == "runningLocal")
        #expect(FileManager.default.createFile(atPath: s.dir.path + "/gate", contents: nil))
        run.waitUntilExit()
        #expect(run.terminationStatus == 0, "\((try? String(contentsOfFile: s.dir.path + "/run.log", encoding: .utf8)) ?? "")")
        #expect(try s.state("look") == "succeeded")
        #expect(try s.commits("answer") == 1)
        try GitCLI.expectHealthy(s.inst)
    }

    // MARK: Hooks

    /// A run that waited for the hanging hook would hang for an hour: the time limit guards against that, it is no speed check.
    @Test(.timeLimit(.minutes(10))) func hooksGetTheEnvironmentAndAHangingOneDoesNotStallTheRun() async throws {
        try await offPool { try self.hooks() }
    }

    func hooks() throws {
        let out = try TemporaryDirectory()
        let s = try Setup(template: Self.ask, config: """
            hookTimeout: 1h
            hooks:
              await:
                - [sh, -c, "env | grep ^FLOWDIR_ | sort > \(out.path)/$FLOWDIR_NODE.env"]
                - [sh, -c, "echo $$ > \(out.path)/hook.pid; exec sleep 3600"]
            """)
        let r = try s.flowdir(["run", "inst"])
        #expect(r.status == 2, "\(r.stderr)")
        // The run ended while its hook still runs (which is then stopped here).
        var hook: Int32?
        Eventually.blockingUntil(timeout: .seconds(10)) {
            hook = (try? String(contentsOfFile: out.path + "/hook.pid", encoding: .utf8)).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            return hook != nil
        }
        if let hook {
            #expect(ProcessTable.isAlive(hook), "the hook had ended by the time the run did")
            kill(hook, SIGKILL)
        } else {
            Issue.record("the hanging hook never started")
        }
        var env = ""
        Eventually.blockingUntil(every: .milliseconds(50)) {
            env = (try? String(contentsOfFile: out.path + "/pick.env", encoding: .utf8)) ?? ""
            // Only the documented variables: the test's own (FLOWDIR_CONFIG, FLOWDIR_NOW) and the
            // test command's (FLOWDIR_REQUIRE_COMPONENTS, FLOWDIR_TEST_*, the venvs) are inherited.
            let inherited = ["FLOWDIR_CONFIG=", "FLOWDIR_NOW=", "FLOWDIR_REQUIRE_COMPONENTS=", "FLOWDIR_TEST_", "FLOWDIR_COG_VENV=",
                             "FLOWDIR_BROWSER_VENV=", "FLOWDIR_LFS_VENV="]
            env = env.split(separator: "\n").filter { line in !inherited.contains { line.hasPrefix($0) } }
                .map { $0 + "\n" }.joined()
            return !env.isEmpty
        }
        let link = String(try s.text("inbox/pick.await.yaml").split(separator: "\n").first { $0.hasPrefix("link: ") }!.dropFirst(6))
        #expect(env == """
            FLOWDIR_AWAIT_FILE=\(s.inst)/inbox/pick.await.yaml
            FLOWDIR_EVENT=await
            FLOWDIR_INSTANCE=\(s.inst)
            FLOWDIR_LINK=\(link)
            FLOWDIR_NODE=pick
            FLOWDIR_URL=

            """)
        // The sleeping hook is ended by its timeout even after flowdir exited; end it now.
        _ = try? CommandRunner.run("/usr/bin/pkill", ["-f", "sleep 50"])
    }
}

/// Reads a run.yaml in tests.
enum RunRecordCodecReader {
    static func read(_ path: String) throws -> RunRecord {
        let bytes = try LocalFileSystem().readFile(path, limit: 1 << 20)
        return try RunRecordCodec.decode(bytes, file: path).get()
    }
}
