import FlowdirCore
import FlowdirIO
import FlowdirRuntime
import FlowdirTestSupport
import Foundation
import Testing

/// docs/engine.md, "Stale outputs" and "Retry, rerun, cancel", with real files and processes.
@Suite(.tags(.medium)) struct ChangeTests {
    func chain() throws -> Flow {
        try Flow(nodes: [("a", "{ text: A }"), ("b", "{ text: B }")], edges: ["a.out -> b.a"])
    }

    @Test func editedParamsBlockTheNodeUntilRerun() async throws {
        let flow = try chain()
        _ = try await flow.run()
        try flow.setParams("b", "text: Z\n")
        var outcome = try await flow.run()
        #expect(outcome.states["b"] == .blocked(.paramsChanged))
        #expect(outcome.exitCode == 2)
        outcome = try await flow.run(rerun: ["b"])
        #expect(outcome.states["b"] == .succeeded)
        #expect(try flow.output("b") == "ZA")
        #expect(try flow.runRecord("b", 2).trigger == .rerun)
        try GitCLI.expectHealthy(flow.instance)
    }

    @Test func anUpToDateRunIsAnsweredFromStatsButNoEditIsMissed() async throws {
        let flow = try chain()
        _ = try await flow.run()
        _ = try await flow.run()  // nothing to do: noted
        let cache = flow.instance + "/.flowdir/up-to-date"
        #expect(FileManager.default.fileExists(atPath: cache))
        let head = try GitCLI.run(["rev-parse", "HEAD"], in: flow.instance)
        #expect(try await flow.run().exitCode == 0)
        #expect(try GitCLI.run(["rev-parse", "HEAD"], in: flow.instance) == head)
        // An edit moves a stat: the full evaluation sees it.
        try flow.setParams("a", "text: changed\n")
        let outcome = try await flow.run()
        #expect(outcome.states["a"] == .blocked(.paramsChanged))
        #expect(outcome.exitCode == 2)
        // A tool edited beside the template counts too.
        _ = try await flow.run()
        let tool = flow.dir.path + "/wf/tools/Step.yaml"
        try (try String(contentsOfFile: tool, encoding: .utf8) + "\n# edited\n").write(toFile: tool, atomically: true, encoding: .utf8)
        #expect(try String(contentsOfFile: cache, encoding: .utf8).contains(tool))
        #expect(try await flow.run().states["a"] == .blocked(.paramsChanged))
    }

    /// The engine takes each node's last run from the instance as read (on
    /// every core), not file by file after: the reader hands them over only
    /// when asked, and leaves out one it cannot read.
    @Test func eachNodesLastRunIsReadWithTheInstanceWhenAsked() async throws {
        let flow = try chain()
        _ = try await flow.run()
        _ = try await flow.run(rerun: ["b"])
        var reader = InstanceReader()
        #expect(try reader.read(flow.instance).lastRuns.isEmpty)
        reader.readsLastRuns = true
        let runs = try reader.read(flow.instance).lastRuns
        #expect(runs.keys.sorted() == ["a", "b"])
        #expect(runs["a"] == (try flow.runRecord("a", 1)))
        #expect(runs["b"] == (try flow.runRecord("b", 2)))
        try "run: [".write(toFile: flow.instance + "/nodes/b/runs/2/run.yaml", atomically: true, encoding: .utf8)
        #expect(try reader.read(flow.instance).lastRuns.keys.sorted() == ["a"])
    }

    @Test func newBytesUpstreamBlockConsumersAndSameBytesDoNot() async throws {
        let flow = try chain()
        _ = try await flow.run()
        // Rerun upstream with identical bytes: nothing downstream changes.
        var outcome = try await flow.run(rerun: ["a"])
        #expect(outcome.states["a"] == .succeeded)
        #expect(outcome.states["b"] == .succeeded)
        #expect(try flow.snapshot().states["b"]?.run == 1)
        // New bytes upstream: b used the old ones, so it is blocked, saying why.
        try flow.setParams("a", "text: A2\n")
        outcome = try await flow.run(rerun: ["a"])
        #expect(outcome.states["b"] == .blocked(.inputChanged(node: "a")))
        #expect(try flow.snapshot().states["b"]?.state.reason == "Input from 'a' has changed")
        // --downstream reruns the consumers too.
        outcome = try await flow.run(rerun: ["a"], downstream: true)
        #expect(outcome.states["b"] == .succeeded)
        #expect(try flow.output("b") == "BA2")
    }

    @Test func onChangeRerunRunsInsteadOfBlocking() async throws {
        let flow = try Flow(nodes: [("a", "{ text: A }"), ("b", "{ text: B }")], edges: ["a.out -> b.a"],
                            options: "{ onChange: rerun }")
        _ = try await flow.run()
        try flow.setParams("b", "text: Q\n")
        let outcome = try await flow.run()
        #expect(outcome.states["b"] == .succeeded)
        #expect(try flow.output("b") == "QA")
    }

    @Test func retryUsesTheFrozenInputsEvenAfterUpstreamChanged() async throws {
        let flow = try chain()
        _ = try await flow.run()
        let first = try flow.runRecord("b", 1)
        try flow.setParams("a", "text: NEW\n")
        _ = try await flow.run(rerun: ["a"])
        #expect(try flow.output("a") == "NEW")
        let outcome = try await flow.run(retry: ["b"])
        #expect(try flow.output("b") == "BA")  // made from a's old bytes, restored from git
        // The retry reproduced the old result, which is stale against a's new
        // output: the node says so, as any consumer of changed inputs does.
        #expect(outcome.states["b"] == .blocked(.inputChanged(node: "a")))
        let retry = try flow.runRecord("b", 2)
        #expect(retry.trigger == .retry)
        #expect(retry.inputs == first.inputs)
        try GitCLI.expectHealthy(flow.instance)
    }

    @Test func retryFromAnOlderRunUsesThatRunsInputsAndParams() async throws {
        let flow = try chain()
        _ = try await flow.run()
        let first = try flow.runRecord("b", 1)
        try flow.setParams("a", "text: NEW\n")
        _ = try await flow.run(rerun: ["a"], downstream: true)
        try flow.setParams("b", "text: Q\n")
        _ = try await flow.run(rerun: ["b"])
        #expect(try flow.runRecord("b", 3).params != first.params)
        // From run 1: a's old bytes, restored from git, and b's old params, whatever b's last run had.
        _ = try await flow.run(retry: ["b"], retryFrom: 1)
        #expect(try flow.output("b") == "BA")
        let retry = try flow.runRecord("b", 4)
        #expect(retry.trigger == .retry && retry.inputs == first.inputs && retry.params == first.params)
        await #expect {
            _ = try await flow.run(retry: ["b"], retryFrom: 9)
        } throws: { error in
            "\(error)" == "'b' has no run 9 to retry from; `flowdir history` lists its runs"
        }
        try GitCLI.expectHealthy(flow.instance)
    }

    /// A flowdir that only settles (an answer's, the pages') would lose a
    /// retry's frozen inputs on closing: it leaves the request for one that
    /// starts jobs, which carries it out with them.
    @Test func aRetryIsLeftForAFlowdirThatStartsJobs() async throws {
        let flow = try chain()
        _ = try await flow.run()
        try flow.setParams("a", "text: NEW\n")
        _ = try await flow.run(rerun: ["a"])
        try RequestBox.post(PersonRequest(verb: .retry, node: "b", by: "ada"), to: flow.instance)
        #expect(try await flow.engine().settle(flow.instance))
        #expect(RequestBox.pending(flow.instance).count == 1, "left for a flowdir that starts jobs")
        #expect(try flow.snapshot().states["b"]?.run == 1)
        _ = try await flow.run()
        #expect(RequestBox.pending(flow.instance).isEmpty)
        let retry = try flow.runRecord("b", 2)
        let first = try flow.runRecord("b", 1)
        #expect(retry.trigger == .retry && retry.inputs == first.inputs)
        #expect(try flow.output("b") == "BA")
    }

    @Test func retryRefusesBeforeStartingWhenAFrozenBlobIsGone() async throws {
        let flow = try chain()
        _ = try await flow.run()
        let blob = try flow.runRecord("b", 1).inputs[0].blob
        // Lose the object (as a pruned or shallow clone would).
        try GitCLI.loseObject(blob, in: flow.instance)
        #expect(throws: (any Error).self) { try GitCLI.run(["cat-file", "-e", blob], in: flow.instance) }
        await #expect {
            _ = try await flow.run(retry: ["b"])
        } throws: { error in
            "\(error)".hasPrefix("cannot retry 'b': its input 'a' (blob \(blob.prefix(12))) is no longer in the repository")
        }
        #expect(try flow.state("b") == .succeeded)  // nothing started
        #expect(try flow.snapshot().states["b"]?.run == 1)
    }

    @Test func cancelLeavesNoProcessOfTheJobAlive() async throws {
        let flow = try Flow(nodes: [("long", "{ sleep: 60, child: true }")], edges: [])
        let engine = flow.engine(grace: 1)
        let task = Task { try await engine.run(flow.instance) }
        // Wait until it runs, then ask to cancel the way `flowdir cancel` does from another terminal.
        let work = flow.instance + "/.flowdir/work/long.1"
        // The tool reports progress once it has started its child.
        let state = flow.instance + "/nodes/long/state.yaml"
        // Generous: the suite runs tests side by side.
        await Eventually.until(timeout: .seconds(90), every: .milliseconds(50)) {
            (try? String(contentsOfFile: state, encoding: .utf8))?.contains("progress: 0.5") ?? false
        }
        let groups = ProcessTable.jobGroups(runDirectories: [work])[work] ?? []
        try #require(groups.count == 1, "the tool never started")
        let pid = groups.first!
        #expect(ProcessTable.members(ofGroup: pid).count >= 2)  // the tool and its `sleep 60`
        // What `flowdir cancel` in another terminal does: a request for the engine holding the instance.
        try RequestBox.post(PersonRequest(verb: .cancel, node: "long", by: "someone"), to: flow.instance)
        let outcome = try await task.value
        guard case .cancelled(let reason)? = outcome.states["long"] else { Issue.record("not cancelled"); return }
        #expect(reason?.hasPrefix("Cancelled by ") == true)
        // The group was sent SIGKILL; a member dies when it is next
        // scheduled, on a loaded machine a moment later (as in GroupCommitTests).
        await Eventually.until(timeout: .seconds(10)) { ProcessTable.members(ofGroup: pid).isEmpty }
        #expect(ProcessTable.members(ofGroup: pid).isEmpty)
        try GitCLI.expectHealthy(flow.instance)
    }

    @Test func aCrashedRunIsRecordedAsInterruptedAndRunsAgain() async throws {
        let flow = try chain()
        // What a kill -9 mid-run leaves: a node "running", its run.yaml started, no process.
        let open = try OpenInstance.open(flow.instance, purpose: "test")
        try open.commit([.write("nodes/a/state.yaml", "state: runningLocal\nrun: 1\nupdatedAt: 2026-11-22T10:00:00Z\n"),
                         .write("nodes/a/runs/1/run.yaml", "run: 1\nnode: a\nkind: Step\nstartedAt: 2026-11-22T10:00:00Z\n")],
                        message: CommitMessage(summary: "a → runningLocal", event: "start"))
        try open.close()
        let outcome = try await flow.run()
        #expect(outcome.exitCode == 0)
        let interrupted = try flow.runRecord("a", 1)
        #expect(interrupted.error?.summary == "interrupted")
        #expect(try flow.runRecord("a", 2).exitCode == 0)
    }
}
