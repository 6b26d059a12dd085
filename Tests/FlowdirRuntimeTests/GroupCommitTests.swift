import FlowdirCore
import FlowdirIO
@testable import FlowdirRuntime
import FlowdirTemplates
import FlowdirTestSupport
import Foundation
import Testing

/// Group commit: jobs that end in quick succession share commits, every
/// transition is still recorded once, and what a crash leaves of a held
/// group is undone on the next open.
@Suite(.tags(.medium)) struct GroupCommitTests {
    /// `n` independent `touch` steps (a job of ~1 ms), plus one that joins two of them.
    static func touches(_ n: Int) throws -> (TemporaryDirectory, String) {
        let dir = try TemporaryDirectory()
        try dir.write("wf/tools/Touch.yaml", """
            kind: Touch
            inputs: { a: FileRef?, b: FileRef? }
            outputs: { out: FileRef }
            run:
              command: [touch, "{outputs.out}"]
            """)
        var yaml = "schema: app.workflow/v2\nname: touches\nnodes:\n"
        for i in 1...n { yaml += "  - { id: t\(i), kind: Touch }\n" }
        yaml += "  - { id: join, kind: Touch, inputs: { a: FileRef, b: FileRef } }\n"
        yaml += "edges:\n  - t1.out -> join.a\n  - t2.out -> join.b\noptions: { concurrency: { local: 2 } }\n"
        try dir.write("wf/t.yaml", yaml)
        let loaded = TemplateLoader(fileSystem: LocalFileSystem()).load(path: dir.path + "/wf/t.yaml")
        let instance = dir.path + "/inst"
        try InstanceCreator().create(template: loaded, templatePath: dir.path + "/wf/t.yaml", directory: instance,
                                     title: "touches", overrides: [])
        return (dir, instance)
    }

    static func engine(window: Duration, poll: Duration = .milliseconds(200)) -> Engine {
        var options = EngineOptions(machineCaps: QueueCaps(local: 2, remote: 8))
        options.commitWindow = window
        options.pollInterval = poll
        return Engine(options: options)
    }

    @Test func shortJobsShareCommitsAndEveryTransitionIsRecordedOnce() async throws {
        let (dir, instance) = try Self.touches(40)
        defer { withExtendedLifetime(dir) {} }  // its deinit removes the folder
        let before = Int(try GitCLI.run(["rev-list", "--count", "HEAD"], in: instance).trimmingCharacters(in: .whitespacesAndNewlines))!
        // A window (and a poll for other terminals, which commits what is held
        // first) longer than the run: no commit is made for the window's sake.
        let outcome = try await Self.engine(window: .seconds(120), poll: .seconds(120)).run(instance)
        #expect(outcome.exitCode == 0)
        let commits = Int(try GitCLI.run(["rev-list", "--count", "HEAD"], in: instance).trimmingCharacters(in: .whitespacesAndNewlines))! - before
        // Near the end a held group may go early, when what is left would take
        // less than committing it (`GroupCommit.isDue`, from measured job and
        // commit times: more often on a loaded machine); never one a job.
        #expect(commits <= 10, "41 jobs, one commit each at least without grouping; got \(commits): \((try? GitCLI.run(["log", "--format=%s", "-n", String(commits)], in: instance)) ?? "")")
        let trailers = try GitCLI.run(["log", "--format=%(trailers:key=Flowdir-Transition,valueonly)"], in: instance)
            .split(separator: "\n").map(String.init)
        for id in (1...40).map({ "t\($0)" }) + ["join"] {
            #expect(trailers.filter { $0 == "\(id) ready→runningLocal run=1" }.count == 1, "\(id) started once")
            #expect(trailers.filter { $0 == "\(id) runningLocal→succeeded run=1" }.count == 1, "\(id) succeeded once")
        }
        try GitCLI.expectHealthy(instance)
        #expect(try GitCLI.run(["status", "--porcelain", "--untracked-files=all"], in: instance).isEmpty)
        // `touch` prints nothing: its log is made by the commit, empty, and committed.
        for id in ["t1", "t40", "join"] {
            let log = "nodes/\(id)/runs/1/log.txt"
            #expect(try String(contentsOfFile: instance + "/" + log, encoding: .utf8) == "")
            #expect(try GitCLI.run(["cat-file", "-s", "HEAD:" + log], in: instance).trimmingCharacters(in: .whitespacesAndNewlines) == "0")
        }
        // Each job's work folder is gone once its end is committed.
        #expect(try FileManager.default.contentsOfDirectory(atPath: instance + "/.flowdir/work").isEmpty)
    }

    /// What tells a run's end is near (`Engine.heldGroupIsDue`): the nodes
    /// waiting for an upstream output are counted as states change.
    @Test func nodesWaitingForUpstreamAreCounted() async throws {
        let (dir, instance) = try Self.touches(3)
        defer { withExtendedLifetime(dir) {} }
        let rt = try InstanceRuntime(open: try OpenInstance.open(instance, purpose: "test"), now: Timestamp(seconds: 0))
        defer { try? rt.open.close() }
        #expect(rt.waiting == 1, "join waits for t1 and t2")
        #expect(rt.ready.inOrder(rt.graph) == ["t1", "t2", "t3"])
        rt.noteState("join", .ready)
        #expect(rt.waiting == 0)
        rt.noteState("join", .blocked(.waitingFor(port: "b", node: "t2")))
        rt.noteState("join", .blocked(.waitingFor(port: "a", node: "t1")))
        #expect(rt.waiting == 1)
        rt.noteState("join", .blocked(.paramsChanged))
        #expect(rt.waiting == 0)
    }

    @Test func whatACrashLeavesOfAHeldGroupIsUndoneAndItsLaunchRecorded() async throws {
        let (dir, instance) = try Self.touches(3)
        defer { withExtendedLifetime(dir) {} }
        #expect(try await Self.engine(window: .milliseconds(20)).run(instance).exitCode == 0)
        let committed = try GitCLI.run(["rev-parse", "HEAD"], in: instance)
        // As a kill -9 during a held group leaves it: t3's second run started
        // (its start not committed), its job alive in a group of its own, its
        // log begun, its new output moved into out/.
        let work = instance + "/.flowdir/work/t3.2"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        // Found by the folder it was started for, as flowdir starts a job (`sh` changed folder since).
        let job = try GroupLeader(["/bin/sleep", "60"], directory: instance, environment: ["FLOWDIR_RUN_DIR": work])
        defer { job.end() }
        let pid = job.pid
        // And one an older flowdir left, in its `<node>/<run>` folder.
        let oldWork = instance + "/.flowdir/work/t2/1"
        try FileManager.default.createDirectory(atPath: oldWork, withIntermediateDirectories: true)
        let oldJob = try GroupLeader(["/bin/sleep", "60"], directory: instance, environment: ["FLOWDIR_RUN_DIR": oldWork])
        defer { oldJob.end() }
        let output = try #require(try FileManager.default.contentsOfDirectory(atPath: instance + "/nodes/t3/out").first)
        do {
            let store = try InstanceStore.open(instance, purpose: "test")
            try store.intend(["nodes/t3/runs/2/log.txt", "nodes/t3/out/" + output])
            try store.close()
        }
        try FileManager.default.createDirectory(atPath: instance + "/nodes/t3/runs/2", withIntermediateDirectories: true)
        try "half a log\n".write(toFile: instance + "/nodes/t3/runs/2/log.txt", atomically: true, encoding: .utf8)
        try "new bytes\n".write(toFile: instance + "/nodes/t3/out/" + output, atomically: true, encoding: .utf8)

        let outcome = try await Self.engine(window: .milliseconds(20)).run(instance)
        #expect(outcome.exitCode == 0)
        // SIGKILL takes effect when the process is next scheduled: on a loaded machine, a moment later.
        await Eventually.until(timeout: .seconds(10)) { !ProcessTable.isAlive(pid) && !ProcessTable.isAlive(oldJob.pid) }
        #expect(!ProcessTable.isAlive(pid), "the leftover job's group is ended")
        #expect(!ProcessTable.isAlive(oldJob.pid), "the older flowdir's leftover job's group is ended")
        #expect(try FileManager.default.contentsOfDirectory(atPath: instance + "/.flowdir/work").isEmpty)
        // The launch is in the history, as interrupted; t3 keeps its state and its outputs of run 1.
        #expect(try GitCLI.run(["show", "HEAD:nodes/t3/runs/2/run.yaml"], in: instance).contains("interrupted before its start was recorded"))
        #expect(try GitCLI.run(["rev-parse", "HEAD~1"], in: instance) == committed, "one commit: the recovery")
        #expect(try GitCLI.run(["diff", "--name-only", "HEAD~1", "HEAD"], in: instance) == "nodes/t3/runs/2/run.yaml\n")
        #expect(try String(contentsOfFile: instance + "/nodes/t3/out/" + output, encoding: .utf8) != "new bytes\n")
        #expect(try GitCLI.run(["status", "--porcelain", "--untracked-files=all"], in: instance).isEmpty)
        try GitCLI.expectHealthy(instance)
    }

    /// An output put in place again while its earlier version waits in a
    /// held group (a node run twice in one window): the earlier version is
    /// committed first, so the blob a consumer's run.yaml names stays in history.
    @Test func anOutputPlacedAgainWhileHeldKeepsItsEarlierVersionInHistory() async throws {
        let (dir, instance) = try Self.touches(2)
        defer { withExtendedLifetime(dir) {} }
        let path = "nodes/t1/out/out.bin"
        try await Self.engine(window: .seconds(120)).placeTwiceWhileHeld(instance, path, Array("first\n".utf8), Array("second\n".utf8))
        let commits = try GitCLI.run(["log", "--format=%H", "--", path], in: instance).split(separator: "\n").map(String.init)
        #expect(commits.count == 2, "one commit per version: \(commits)")
        if commits.count == 2 {
            #expect(try GitCLI.run(["show", "\(commits[1]):\(path)"], in: instance) == "first\n")
            #expect(try GitCLI.run(["show", "\(commits[0]):\(path)"], in: instance) == "second\n")
        }
        #expect(try GitCLI.run(["status", "--porcelain", "--untracked-files=all"], in: instance).isEmpty)
        try GitCLI.expectHealthy(instance)
    }
}

extension Engine {
    /// What finishing a node twice within one held group does to its output.
    func placeTwiceWhileHeld(_ instance: String, _ path: String, _ first: [UInt8], _ second: [UInt8]) throws {
        let rt = try adopt(try OpenInstance.open(instance, purpose: "test"))
        defer {
            instances[rt.path] = nil
            try? rt.open.close()
        }
        let full = rt.path + "/" + path
        try Files.makeDirectories(Path.directory(of: full))
        grouping.eventsArrived(at: grouping.lastCommit)  // right after a commit: held
        try Files.writeAtomically(full, first)
        try commit(rt, [.placed(path, first)], [], event: "finish")
        try Files.writeAtomically(full, second)
        try commit(rt, [.placed(path, second)], [], event: "finish")
        grouping.release()
        try flush()
    }
}
