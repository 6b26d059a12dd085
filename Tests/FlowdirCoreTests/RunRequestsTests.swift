import FlowdirCore
import FlowdirTestSupport
import Testing

/// `flowdir retry` and `rerun` as decisions (the engine's tests run them on real instances).
@Suite(.tags(.small)) struct RunRequestsTests {
    let now = Timestamp(seconds: 0)

    func run(_ n: Int) -> RunRecord {
        RunRecord(run: n, node: "b", kind: "T", trigger: .auto, params: [], inputs: [], startedAt: now, host: "h", user: "u")
    }

    func facts(_ state: NodeState, run: Int, last: RunRecord? = nil) -> NodeFacts {
        NodeFacts(state: NodeStateRecord(state: state, run: run, updatedAt: now), lastRun: last)
    }

    @Test func retryTakesTheLastRunThatStarted() {
        let failed = NodeState.failed(NodeError(summary: "x", code: "y"))
        #expect(RunRequests.retry(facts(failed, run: 2, last: run(2)), lastStarted: { Issue.record("not read"); return nil }) == .from(run(2)))
        // Run 3 failed before it started (an input was gone): run 2 froze the inputs.
        #expect(RunRequests.retry(facts(failed, run: 3), lastStarted: { run(2) }) == .from(run(2)))
        #expect(RunRequests.retry(facts(failed, run: 1), lastStarted: { nil }) == .startAgain, "none ever started")
        #expect(RunRequests.retry(facts(.ready, run: 0), lastStarted: { nil }) == .refused, "never tried")
        #expect(RunRequests.retry(facts(.runningLocal, run: 2, last: run(1)), lastStarted: { nil }) == .refused, "running: cancel it first")
    }

    @Test func retryFromAChosenRunTakesThatRunsRecord() {
        let failed = NodeState.failed(NodeError(summary: "x", code: "y"))
        let records = [1: run(1), 2: run(2)]
        #expect(RunRequests.retry(facts(failed, run: 3, last: run(3)), from: 1, record: { records[$0] }, lastStarted: { nil }) == .from(run(1)))
        #expect(RunRequests.retry(facts(failed, run: 3, last: run(3)), from: 3, record: { _ in Issue.record("not read"); return nil },
                                  lastStarted: { nil }) == .from(run(3)), "the last run's record is at hand")
        #expect(RunRequests.retry(facts(failed, run: 3), from: 9, record: { records[$0] }, lastStarted: { nil }) == .noSuchRun(9))
        #expect(RunRequests.retry(facts(.runningLocal, run: 3), from: 1, record: { records[$0] }, lastStarted: { nil }) == .refused)
    }

    @Test func rerunDownstreamWaitsForTheNodeAndLeavesRunningAndAskingNodesAlone() {
        let tool = ToolDefinition(kind: "T", inputs: [PortSpec(name: "in", type: .file, optional: true)],
                                  outputs: [PortSpec(name: "out", type: .file)], run: .builtin, flexiblePorts: true)
        let chain = ["a", "b", "c", "d", "e"]
        let t = WorkflowTemplate(name: "g", nodes: chain.map { NodeSpec(id: $0, kind: "T") }, edges: zip(chain, chain.dropFirst()).map {
            EdgeSpec(from: PortRef(node: $0.0, port: "out"), to: PortRef(node: $0.1, port: "in"))
        })
        let graph = TemplateValidator.validate(t) { _ in .found(tool) }.graph!
        let states: [String: NodeState] = ["a": .succeeded, "b": .succeeded, "c": .blocked(.waitingFor(port: "in", node: "b")),
                                           "d": .runningLocal, "e": .awaitingUser]
        let alone = RunRequests.rerun("b", downstream: false, graph: graph) { states[$0]! }
        #expect(alone.again == ["b"] && alone.wait.isEmpty)
        let all = RunRequests.rerun("b", downstream: true, graph: graph) { states[$0]! }
        #expect(all.again == ["b", "c"])
        #expect(all.wait.isEmpty, "c already waits for b")
        let fromA = RunRequests.rerun("a", downstream: true, graph: graph) { states[$0]! }
        #expect(fromA.again == ["a", "b", "c"])
        #expect(fromA.wait.map(\.node) == ["b", "c"])
        #expect(fromA.wait.map(\.reason) == [.waitingFor(port: "in", node: "a"), .waitingFor(port: "in", node: "a")])
    }
}
