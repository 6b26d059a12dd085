import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// `flowdir watch` end to end: the built binary over a real folder, real
/// inotify, files written the ways editors, sync tools and people write
/// them. Each way must count exactly once.
@Suite(.serialized, .tags(.large), Tier.notQuick) struct WatchCommandTests {
    static let tool = """
        kind: Echo
        inputs: { a: TextRef? }
        outputs: { out: TextRef }
        params: { text: { type: string, default: x }, sleep: { type: number, default: 0 } }
        run:
          command: [sh, -c, 'sleep "$3"; printf "%s" "$1" > "$0"; [ -n "$2" ] && cat "$2" >> "$0"; true',
                    "{outputs.out}", "{params.text}", "{inputs.a}", "{params.sleep}"]
        """

    /// A root with a template and a running watcher over it.
    final class Watching: @unchecked Sendable {
        let dir: TemporaryDirectory
        let env: [String: String]
        var process: Process?
        var root: String { dir.path + "/root" }
        var log: String { dir.path + "/watch.log" }

        init(template: String) throws {
            dir = try TemporaryDirectory()
            try dir.write("wf/tools/Echo.yaml", WatchCommandTests.tool)
            try dir.write("wf/t.yaml", template)
            try FileManager.default.createDirectory(atPath: dir.path + "/root", withIntermediateDirectories: true)
            env = ["XDG_CONFIG_HOME": "/nonexistent", "FLOWDIR_CONFIG": "", "XDG_STATE_HOME": dir.path + "/state",
                   "GIT_AUTHOR_NAME": "Ann", "GIT_COMMITTER_NAME": "Ann"]
        }

        func start() throws {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
            p.arguments = ["watch", root, "--grace", "5"]
            var e = ProcessInfo.processInfo.environment
            for (k, v) in env { e[k] = v }
            p.environment = e
            if !FileManager.default.fileExists(atPath: log) { #expect(FileManager.default.createFile(atPath: log, contents: nil)) }
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
            try handle.seekToEnd()
            p.standardOutput = handle
            p.standardError = handle
            try p.run()
            process = p
            try waitFor("the watcher to start") { self.logText().components(separatedBy: "] watching").count - 1 > self.starts }
            starts += 1
        }
        var starts = 0

        func stop(signal: Int32 = SIGTERM) {
            guard let p = process else { return }
            kill(p.processIdentifier, signal)
            p.waitUntilExit()
            process = nil
        }

        deinit { stop(signal: SIGKILL) }

        func logText() -> String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

        @discardableResult
        func flowdir(_ args: [String]) throws -> CommandResult {
            try CommandRunner.flowdir(args, in: dir.path, environment: env)
        }

        func inst(_ name: String = "inst") -> String { root + "/" + name }

        func state(_ node: String, in name: String = "inst") -> String { InstanceProbe.state(inst(name), node) }

        func commits(_ event: String, in name: String = "inst") throws -> Int { try InstanceProbe.commits(inst(name), event: event) }

        /// Polls until `condition` holds (a watcher acts within milliseconds; 10 s is generous).
        func waitFor(_ what: String, timeout: Double = 10, _ condition: () throws -> Bool) throws {
            if try Eventually.blockingUntil(timeout: .seconds(timeout), every: .milliseconds(20), condition) { return }
            throw GitCLI.Failure(description: "timed out waiting for \(what); watcher log:\n\(logText())")
        }

        /// Waits until the watcher has closed the instance (idle past its
        /// linger): its lock is free. Looked at in /proc/locks, never taken.
        func closed(_ name: String = "inst") throws {
            try waitFor("the watcher to close \(name)") { !ProcessProbe.flockHeld(on: inst(name) + "/.flowdir/lock") }
        }

        /// Waits for things to settle: no new commit for a while.
        func quiet(_ name: String = "inst", for seconds: Double = 0.6) throws {
            var last = ""
            let clock = FlowdirClock.system
            var stableSince = clock.instant
            Eventually.blockingUntil(timeout: .seconds(15), every: .milliseconds(50)) {
                let head = (try? GitCLI.run(["rev-parse", "HEAD"], in: inst(name))) ?? ""
                if head != last { last = head; stableSince = clock.instant }
                return clock.instant - stableSince >= .seconds(seconds)
            }
        }
    }

    static let chain = """
        schema: app.workflow/v2
        name: Chain
        nodes:
          - { id: a, kind: Echo, params: { text: A } }
          - { id: b, kind: Echo, params: { text: B }, inputs: { a: TextRef } }
          - { id: pick, kind: UserAssetPicker, outputs: { image: ImageRef } }
          - { id: mask, kind: UserMaskEditor, inputs: { image: ImageRef }, outputs: { mask: MaskRef } }
          - { id: look, kind: Choice, outputs: { choice: JSONRef }, await: { type: choice, choices: [x, y] } }
        edges: [a.out -> b.a, pick.image -> mask.image]
        """

    @Test func aNewInstanceRunsAndEachWayOfAnsweringCountsOnce() async throws {
        try await offPool { try self.answers() }
    }

    func answers() throws {
        let w = try Watching(template: Self.chain)
        try w.start()
        #expect(try w.flowdir(["new", "wf/t.yaml", "root/inst"]).status == 0)
        try w.waitFor("a and b to run") { w.state("b") == "succeeded" && w.state("pick") == "awaitingUser" }
        let png = SampleFiles.png()
        // mv from elsewhere
        try Data(png).write(to: URL(fileURLWithPath: w.dir.path + "/photo.png"))
        try FileManager.default.moveItem(atPath: w.dir.path + "/photo.png", toPath: w.inst() + "/inbox/pick.image.png")
        try w.waitFor("pick to be answered") { w.state("pick") == "succeeded" && w.state("mask") == "awaitingUser" }
        try w.quiet()
        #expect(try w.commits("answer") == 1)
        // cp, written in place
        try Data(png).write(to: URL(fileURLWithPath: w.dir.path + "/mask.png"))
        _ = try CommandRunner.run("/bin/cp", [w.dir.path + "/mask.png", w.inst() + "/inbox/mask.mask.png"])
        try w.waitFor("mask to be answered") { w.state("mask") == "succeeded" }
        try w.quiet()
        #expect(try w.commits("answer") == 2)
        // flowdir answer, handed to the watcher or done itself
        let r = try w.flowdir(["answer", "root/inst/look", "--choice", "y"])
        #expect(r.status == 0, "\(r.stderr)")
        try w.waitFor("look to be answered") { w.state("look") == "succeeded" }
        try w.quiet()
        #expect(try w.commits("answer") == 3)
        // retry while the watcher runs: done here when the instance is free, handed over when not.
        let retry = try w.flowdir(["retry", "root/inst", "a"])
        #expect([0, 2].contains(retry.status), "\(retry.stdout)\(retry.stderr)")
        try w.waitFor("a's second run") {
            (try? FileManager.default.contentsOfDirectory(atPath: w.inst() + "/nodes/a/runs"))?.count == 2 && w.state("a") == "succeeded"
        }
        try w.quiet()
        #expect(try w.commits("retry") == 1)
        let status = try w.flowdir(["status", "--root", w.root])
        #expect(status.stdout.contains("Watched: \(w.root) by pid \(w.process!.processIdentifier)"), "\(status.stdout)")
        try GitCLI.expectHealthy(w.inst())
        w.stop()
        #expect(w.logText().contains("stopped"))
    }

    @Test func anIdleInstanceChangedBehindTheWatchersBackIsReadAfresh() async throws {
        try await offPool { try self.parkedAndChanged() }
    }

    func parkedAndChanged() throws {
        let w = try Watching(template: Self.chain)
        try w.start()
        #expect(try w.flowdir(["new", "wf/t.yaml", "root/inst"]).status == 0)
        try w.waitFor("the questions") { w.state("look") == "awaitingUser" && w.state("pick") == "awaitingUser" }
        try w.quiet()
        try w.closed()  // idle past the linger: the watcher closes it and keeps its view in memory
        // Another flowdir answers while the watcher cannot (stopped): the lock
        // is free, so it commits itself and HEAD moves behind the watcher's back.
        kill(w.process!.processIdentifier, SIGSTOP)
        let r = try w.flowdir(["answer", "root/inst/look", "--choice", "y"])
        kill(w.process!.processIdentifier, SIGCONT)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(w.state("look") == "succeeded")
        // A drop wakes the watcher: it must not act on its old view (which still has look's question).
        try Data(SampleFiles.png()).write(to: URL(fileURLWithPath: w.dir.path + "/photo.png"))
        try FileManager.default.moveItem(atPath: w.dir.path + "/photo.png", toPath: w.inst() + "/inbox/pick.image.png")
        try w.waitFor("pick to be answered") { w.state("pick") == "succeeded" && w.state("mask") == "awaitingUser" }
        try w.quiet()
        #expect(!FileManager.default.fileExists(atPath: w.inst() + "/inbox/look.await.yaml"), "look's question is not asked again")
        #expect(w.state("look") == "succeeded")
        #expect(try w.commits("answer") == 2)
        w.stop()
        try GitCLI.expectHealthy(w.inst())
    }

    @Test func eachEditorsSaveOfParamsCountsOnce() async throws {
        try await offPool { try self.editors() }
    }

    func editors() throws {
        let w = try Watching(template: """
            schema: app.workflow/v2
            name: Edit
            nodes:
              - { id: a, kind: Echo, params: { text: A } }
            """)
        try w.start()
        #expect(try w.flowdir(["new", "wf/t.yaml", "root/inst"]).status == 0)
        try w.waitFor("a to run") { w.state("a") == "succeeded" }
        try w.quiet()
        let params = w.inst() + "/nodes/a/params.yaml"
        let ways: [(String, () throws -> Void)] = [
            ("vim", { _ = try CommandRunner.run("/usr/bin/vim", ["-es", "-u", "NONE", "-c", "%s/text: A/text: V/", "-c", "wq", params]) }),
            ("sed -i", { _ = try CommandRunner.run("/bin/sed", ["-i", "s/text: V/text: S/", params]) }),
            ("os.replace", {
                _ = try CommandRunner.run("/usr/bin/python3", ["-c", """
                    import os; p = '\(params)'; t = open(p).read().replace('text: S', 'text: P')
                    open(p + '.tmp', 'w').write(t); os.replace(p + '.tmp', p)
                    """])
            }),
            ("cp over", {
                let t = try String(contentsOfFile: params, encoding: .utf8).replacingOccurrences(of: "text: P", with: "text: C")
                try t.write(toFile: w.dir.path + "/new.yaml", atomically: true, encoding: .utf8)
                _ = try CommandRunner.run("/bin/cp", [w.dir.path + "/new.yaml", params])
            }),
        ]
        for (i, (name, edit)) in ways.enumerated() {
            try edit()
            try w.waitFor("the \(name) edit to be committed") { try w.commits("edit") == i + 1 }
            try w.quiet()
            #expect(try w.commits("edit") == i + 1, "\(name)")
            #expect(w.state("a") == "blocked", "\(name)")
        }
        #expect(try String(contentsOfFile: params, encoding: .utf8).contains("text: C"))
        w.stop()  // git's own status may rewrite the index: not while flowdir writes it
        try GitCLI.expectHealthy(w.inst())
    }

    /// A workflow of `count` image pickers, p1…pN (or from p0).
    static func pickers(_ name: String, count: Int, from first: Int = 1) -> String {
        "schema: app.workflow/v2\nname: \(name)\nnodes:\n" + (first..<first + count).map {
            "  - { id: p\($0), kind: UserAssetPicker, outputs: { image: ImageRef } }\n"
        }.joined()
    }

    @Test func syncToolsAndDownloadsCountOnce() async throws {
        try await offPool { try self.syncs() }
    }

    func syncs() throws {
        let w = try Watching(template: Self.pickers("Sync", count: 4))
        try w.start()
        #expect(try w.flowdir(["new", "wf/t.yaml", "root/inst"]).status == 0)
        try w.waitFor("the questions") { ["p1", "p2", "p3", "p4"].allSatisfy { w.state($0) == "awaitingUser" } }
        try w.quiet()
        let png = SampleFiles.png()
        let inbox = w.inst() + "/inbox/"
        // Syncthing: a hidden temp file, written slowly, then renamed.
        let tmp = inbox + ".syncthing.p1.image.png.tmp"
        #expect(FileManager.default.createFile(atPath: tmp, contents: Data(png.prefix(20))))
        usleep(300_000)
        try Data(png).write(to: URL(fileURLWithPath: tmp))
        try FileManager.default.moveItem(atPath: tmp, toPath: inbox + "p1.image.png")
        try w.waitFor("p1") { w.state("p1") == "succeeded" }
        // rsync into the inbox (it writes .p2.image.png.XXXXXX, then renames).
        try Data(png).write(to: URL(fileURLWithPath: w.dir.path + "/p2.image.png"))
        _ = try CommandRunner.run("/usr/bin/rsync", [w.dir.path + "/p2.image.png", inbox])
        try w.waitFor("p2") { w.state("p2") == "succeeded" }
        // A download: *.part, then the final name.
        #expect(FileManager.default.createFile(atPath: inbox + "p3.image.png.part", contents: Data(png.prefix(30))))
        usleep(300_000)
        try Data(png).write(to: URL(fileURLWithPath: inbox + "p3.image.png.part"))
        try FileManager.default.moveItem(atPath: inbox + "p3.image.png.part", toPath: inbox + "p3.image.png")
        try w.waitFor("p3") { w.state("p3") == "succeeded" }
        try w.quiet()
        // git pull of a commit that adds an answer.
        let clone = w.dir.path + "/clone"
        try GitCLI.run(["clone", "-q", w.inst(), clone], in: w.dir.path)
        try Data(png).write(to: URL(fileURLWithPath: clone + "/inbox/p4.image.png"))
        try GitCLI.run(["add", "inbox/p4.image.png"], in: clone)
        try GitCLI.run(["-c", "user.name=Bob", "-c", "user.email=bob@example.org", "commit", "-qm", "answer p4"], in: clone)
        try GitCLI.run(["-c", "user.name=Ann", "-c", "user.email=ann@example.org", "pull", "-q", "--no-rebase", clone, "main"], in: w.inst())
        try w.waitFor("p4") { w.state("p4") == "succeeded" }
        try w.quiet()
        #expect(try w.commits("answer") == 4)
        #expect(try w.commits("reject") == 0)
        try GitCLI.expectHealthy(w.inst())
    }

    /// `ln photo.png inbox/…`: the inbox sees the name created, never
    /// closed after writing or moved in. It is taken once it has been quiet
    /// a moment, whether the instance is still open or already closed.
    @Test func aHardLinkedAnswerIsTakenOnceQuiet() async throws {
        try await offPool { try self.hardLinks() }
    }

    func hardLinks() throws {
        let w = try Watching(template: Self.pickers("Links", count: 3))
        try w.start()
        #expect(try w.flowdir(["new", "wf/t.yaml", "root/inst"]).status == 0)
        try w.waitFor("the questions") { ["p1", "p2", "p3"].allSatisfy { w.state($0) == "awaitingUser" } }
        let photo = w.dir.path + "/photo.png"
        try Data(SampleFiles.png()).write(to: URL(fileURLWithPath: photo))
        // While the instance is still open from the questions.
        #expect(link(photo, w.inst() + "/inbox/p1.image.png") == 0)
        try w.waitFor("p1, linked in") { w.state("p1") == "succeeded" }
        // Once it is closed again (idle past the linger).
        try w.quiet()
        try w.closed()
        #expect(link(photo, w.inst() + "/inbox/p2.image.png") == 0)
        try w.waitFor("p2, linked in") { w.state("p2") == "succeeded" }
        // A file whose time is an hour ahead (from a machine with a fast clock) is not held back for it.
        let ahead = w.dir.path + "/ahead.png"
        try Data(SampleFiles.png()).write(to: URL(fileURLWithPath: ahead))
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(3600)], ofItemAtPath: ahead)
        #expect(link(ahead, w.inst() + "/inbox/p3.image.png") == 0)
        try w.waitFor("p3, linked in with its time ahead") { w.state("p3") == "succeeded" }
        try w.quiet()
        #expect(try w.commits("answer") == 3)
        #expect(try w.commits("reject") == 0)
        #expect(FileManager.default.fileExists(atPath: photo), "the person's own file is left where it was")
        try GitCLI.expectHealthy(w.inst())
    }

    @Test func sigtermStopsCleanlyAndARestartResumes() async throws {
        try await offPool { try self.restart() }
    }

    func restart() throws {
        let w = try Watching(template: """
            schema: app.workflow/v2
            name: Slow
            nodes:
              - { id: a, kind: Echo, params: { text: A, sleep: 3600 } }
              - { id: b, kind: Echo, params: { text: B }, inputs: { a: TextRef } }
            edges: [a.out -> b.a]
            """)
        try w.start()
        #expect(try w.flowdir(["new", "wf/t.yaml", "root/inst"]).status == 0)
        try w.waitFor("a to start") { w.state("a") == "runningLocal" }
        let started = Date()
        w.stop()  // SIGTERM: a gets the 5 s grace, then is stopped and recorded
        // Not held up by a (it sleeps an hour): the bound only tells a wait
        // for it from a loaded machine's slowness.
        #expect(Date().timeIntervalSince(started) < 600)
        #expect(w.process == nil)
        #expect(w.state("a") == "ready")
        try GitCLI.expectHealthy(w.inst())
        let s = try w.flowdir(["status", "--root", w.root])
        #expect(s.stdout.contains("No watcher for"))
        // Restarted with a quick a: it runs again, and b after it.
        try String(contentsOfFile: w.inst() + "/nodes/a/params.yaml", encoding: .utf8)
            .replacingOccurrences(of: "sleep: 3600", with: "sleep: 0").write(toFile: w.inst() + "/nodes/a/params.yaml", atomically: true, encoding: .utf8)
        try w.start()
        try w.waitFor("b to finish") { w.state("b") == "succeeded" }
        #expect(try GitCLI.run(["log", "--format=%s"], in: w.inst()).contains("Edit params of a"))
        try w.quiet()
        try GitCLI.expectHealthy(w.inst())
    }

    @Test func twoWatchersNeverRunANodeTwice() async throws {
        try await offPool { try self.twoWatchers() }
    }

    func twoWatchers() throws {
        var nodes = ""
        for i in 0..<12 { nodes += "  - { id: n\(i), kind: Echo, params: { text: N\(i), sleep: 0.1 } }\n" }
        let w = try Watching(template: "schema: app.workflow/v2\nname: Many\nnodes:\n" + nodes)
        try w.start()
        let other = Process()
        other.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
        other.arguments = ["watch", w.root]
        var e = ProcessInfo.processInfo.environment
        for (k, v) in w.env { e[k] = v }
        other.environment = e
        other.standardOutput = FileHandle.nullDevice
        other.standardError = FileHandle.nullDevice
        try other.run()
        defer { kill(other.processIdentifier, SIGKILL); other.waitUntilExit() }
        try w.waitFor("the second watcher to listen") { ProcessProbe.hasInotifyWatches(other.processIdentifier) }
        for k in 0..<3 { #expect(try w.flowdir(["new", "wf/t.yaml", "root/i\(k)"]).status == 0) }
        for k in 0..<3 {
            try w.waitFor("i\(k) to finish", timeout: 30) { (0..<12).allSatisfy { w.state("n\($0)", in: "i\(k)") == "succeeded" } }
            try w.quiet("i\(k)")
            // Each node ran exactly once: one run folder, one start and one success in history.
            for i in 0..<12 {
                let runs = try FileManager.default.contentsOfDirectory(atPath: w.inst("i\(k)") + "/nodes/n\(i)/runs")
                #expect(runs == ["1"], "i\(k)/n\(i): \(runs)")
            }
            let log = try GitCLI.run(["log", "--format=%B"], in: w.inst("i\(k)"))
            #expect(log.components(separatedBy: "→runningLocal").count - 1 == 12)
            try GitCLI.expectHealthy(w.inst("i\(k)"))
        }
    }

    @Test func killNineTwentyTimesThenItFinishesWithEachSuccessOnce() async throws {
        try await offPool { try self.killNine() }
    }

    func killNine() throws {
        let w = try Watching(template: """
            schema: app.workflow/v2
            name: Kill
            nodes:
              - { id: a, kind: Echo, params: { text: A, sleep: 0.2 } }
              - { id: b, kind: Echo, params: { text: B, sleep: 0.3 }, inputs: { a: TextRef } }
              - { id: c, kind: Echo, params: { text: C, sleep: 0.2 }, inputs: { a: TextRef } }
              - { id: d, kind: Echo, params: { text: D, sleep: 0.3 }, inputs: { a: TextRef } }
              - { id: e, kind: Echo, params: { text: E, sleep: 0.2 }, inputs: { a: TextRef } }
              - { id: f, kind: Echo, params: { text: F, sleep: 0.2 }, inputs: { a: TextRef } }
              - { id: g, kind: Echo, params: { text: G, sleep: 0.1 }, inputs: { a: TextRef } }
              - { id: pick, kind: UserAssetPicker, outputs: { image: ImageRef } }
            edges: [a.out -> b.a, b.out -> c.a, c.out -> d.a, a.out -> e.a, e.out -> f.a, f.out -> g.a]
            """)
        #expect(try w.flowdir(["new", "wf/t.yaml", "root/inst"]).status == 0)
        var rng = SystemRandomNumberGenerator()
        for round in 0..<20 {
            try w.start()
            if round == 5 {
                // An answer dropped while watchers come and go is taken once.
                try Data(SampleFiles.png()).write(to: URL(fileURLWithPath: w.inst() + "/inbox/pick.image.png"))
            }
            usleep(UInt32.random(in: 0...500_000, using: &rng))
            w.stop(signal: SIGKILL)
        }
        try w.start()
        let nodes = ["a", "b", "c", "d", "e", "f", "g", "pick"]
        try w.waitFor("every node to succeed", timeout: 60) { nodes.allSatisfy { w.state($0) == "succeeded" } }
        try w.quiet()
        w.stop()
        try GitCLI.expectHealthy(w.inst(), allowDangling: true)
        let log = try GitCLI.run(["log", "--format=%B"], in: w.inst())
        for n in nodes {
            // Each node succeeded once: one success in history, one run without an error.
            #expect(log.components(separatedBy: "Flowdir-Transition: \(n) ").filter { $0.contains("→succeeded") && $0.prefix(40).contains("→succeeded") }.count == 1, "\(n)")
            let runs = try FileManager.default.contentsOfDirectory(atPath: w.inst() + "/nodes/\(n)/runs")
            let good = try runs.filter { r in
                !(try String(contentsOfFile: w.inst() + "/nodes/\(n)/runs/\(r)/run.yaml", encoding: .utf8)).contains("error:")
            }
            #expect(good.count == 1, "\(n): runs \(runs.sorted())")
        }
        // No job of any attempt outlived its watcher: none of this test's (its
        // folder their working directory; other tests' jobs may run meanwhile).
        let here = Files.realPath(w.dir.path) ?? w.dir.path
        let leftovers = try CommandRunner.run("/usr/bin/pgrep", ["-f", "sleep 0\\.[123]"]).stdout.split(separator: "\n").filter { pid in
            ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/cwd")) ?? "").hasPrefix(here + "/")
        }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test func anOverflowingQueueLosesNoAnswer() async throws {
        try await offPool { try self.overflow() }
    }

    func overflow() throws {
        let count = 300
        let w = try Watching(template: Self.pickers("Many questions", count: count, from: 0))
        #expect(try w.flowdir(["new", "wf/t.yaml", "root/inst"]).status == 0)
        #expect(try w.flowdir(["run", "root/inst"]).status == 2)
        // A tiny event queue for this watcher (the size is fixed when it starts); restored at once.
        let knob = "/proc/sys/fs/inotify/max_queued_events"
        let saved = try String(contentsOfFile: knob, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        func set(_ value: String) throws {
            let r = try CommandRunner.run("/bin/sh", ["-c", "echo \(value) > \(knob)"])
            #expect(r.status == 0, "cannot set \(knob) (root is needed): \(r.stderr)")
        }
        try set("16")
        defer { try? set(saved) }
        #expect(try String(contentsOfFile: knob, encoding: .utf8) == "16\n")
        try w.start()
        try set(saved)
        let staging = w.dir.path + "/staging"
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        let png = Data(SampleFiles.png())
        for i in 0..<count { try png.write(to: URL(fileURLWithPath: staging + "/p\(i).image.png")) }
        // All at once, while the watcher is stopped (SIGSTOP), so its queue overflows for sure.
        kill(w.process!.processIdentifier, SIGSTOP)
        defer { kill(w.process!.processIdentifier, SIGCONT) }
        _ = try CommandRunner.run("/usr/bin/python3", ["-c", """
            import os
            for i in range(\(count)): os.rename(f"\(staging)/p{i}.image.png", f"\(w.inst())/inbox/p{i}.image.png")
            """])
        usleep(200_000)
        #expect(w.state("p0") == "awaitingUser", "the watcher is stopped: nothing is taken yet")
        let stat = (try? String(contentsOfFile: "/proc/\(w.process!.processIdentifier)/stat", encoding: .utf8)) ?? ""
        #expect(stat.contains(") T "), "\(stat)")
        kill(w.process!.processIdentifier, SIGCONT)
        do {
            try w.waitFor("every answer", timeout: 120) { (0..<count).allSatisfy { w.state("p\($0)") == "succeeded" } }
        } catch {
            // How far it got, for a failure seen once under load (with the 50× kill -9 test beside it).
            let done = (0..<count).filter { w.state("p\($0)") == "succeeded" }.count
            let left = (try? FileManager.default.contentsOfDirectory(atPath: w.inst() + "/inbox"))?.count ?? -1
            Issue.record("\(done) of \(count) answers taken; \(left) entries left in inbox/")
            throw error
        }
        try w.quiet()
        #expect(try w.commits("answer") == count)
        #expect(w.logText().contains("inotify queue overflowed"))
        try GitCLI.expectHealthy(w.inst())
    }

    @Test func jsonLogsAndAFullWatchTableIsExplained() throws {
        let dir = try TemporaryDirectory()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: RepositoryPaths.flowdirExecutable)
        p.arguments = ["watch", dir.path, "--json-logs"]
        p.environment = ["XDG_CONFIG_HOME": "/nonexistent", "FLOWDIR_CONFIG": "", "PATH": "/usr/bin:/bin"]
        let log = dir.path + "/log"
        #expect(FileManager.default.createFile(atPath: log, contents: nil))
        p.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        try p.run()
        var line: [String: Any]?
        Eventually.blockingUntil {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            for l in text.split(separator: "\n") {
                if let o = try? JSONSerialization.jsonObject(with: Data(l.utf8)) as? [String: Any], o["message"] as? String == "watching" { line = o }
            }
            return line != nil
        }
        kill(p.processIdentifier, SIGTERM)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0)
        #expect(line?["level"] as? String == "info")
        #expect(line?["roots"] as? String == Files.realPath(dir.path))
        // A full watch table, for real: a limit of 3 watches, and an instance needs more.
        let w = try Watching(template: "schema: app.workflow/v2\nname: One\nnodes:\n  - { id: a, kind: Echo }\n")
        #expect(try w.flowdir(["new", "wf/t.yaml", "root/inst"]).status == 0)
        let knob = "/proc/sys/fs/inotify/max_user_watches"
        let saved = try String(contentsOfFile: knob, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        _ = try CommandRunner.run("/bin/sh", ["-c", "echo 3 > \(knob)"])
        defer { _ = try? CommandRunner.run("/bin/sh", ["-c", "echo \(saved) > \(knob)"]) }
        let r = try w.flowdir(["watch", w.root])
        _ = try CommandRunner.run("/bin/sh", ["-c", "echo \(saved) > \(knob)"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("the inotify watch table is full (fs.inotify.max_user_watches); raise it with `sudo sysctl fs.inotify.max_user_watches="), "\(r.stderr)")
    }
}
