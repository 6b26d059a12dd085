import FlowdirCore
import FlowdirTestSupport
import Testing

/// What picking up after a crash does, case by case, without a crash (the
/// kill scripts in Benchmarks/reliability kill real processes).
@Suite(.tags(.small)) struct RecoveryPlanTests {
    func node(_ id: String, _ state: NodeState, run: Int = 1, remote: Bool = false) -> RecoveryPlan.Node {
        RecoveryPlan.Node(id: id, state: state, run: run, submittedRemote: remote)
    }

    func plan(_ nodes: [RecoveryPlan.Node], folders: [String] = [], holder: Bool = true,
              next: [String: Int] = [:], ranHere: Set<NodeRun> = []) -> RecoveryPlan {
        RecoveryPlan.make(nodes: nodes, workFolders: folders, holder: holder,
                          nextRun: { next[$0] ?? 1 }, ranHere: { ranHere.contains($0) })
    }

    @Test func nothingStaysRunning() {
        let p = plan([node("a", .succeeded), node("b", .runningLocal, run: 3), node("c", .downloading, run: 2), node("d", .ready, run: 0)],
                     folders: ["b.3", "c.2"])
        #expect(p.interrupted == [NodeRun("b", 3), NodeRun("c", 2)])
        #expect(p.unrecorded.isEmpty, "HEAD records those runs")
        #expect(p.follow.isEmpty && p.renumber.isEmpty)
    }

    @Test func aRemoteJobThatWentOnWithoutUsIsFollowedNotSentAgain() {
        let offline = NodeState.blocked(.offline(endpoint: "gpu", since: Timestamp(seconds: 0)))
        let p = plan([node("r", .runningRemote, remote: true), node("q", .queuedRemote, remote: true), node("o", offline, remote: true),
                      node("n", .runningRemote, remote: false)])
        #expect(p.follow == ["r", "q", "o"])
        #expect(p.interrupted == [NodeRun("n", 1)], "no submission recorded: it was never sent, so it runs again")
    }

    @Test func aLaunchNoCommitRecordsIsRecordedUnderItsOwnNumber() {
        let p = plan([node("a", .ready, run: 0), node("b", .succeeded, run: 4), node("c", .failed(NodeError(summary: "x", code: "y")), run: 2)],
                     folders: ["a.1", "b.5", "b.4", "c.2", "zz.1", "notes", "b.x"])
        #expect(p.unrecorded == [NodeRun("a", 1), NodeRun("b", 5)],
                "b.4 and c.2 are HEAD's runs; zz is no node; other names are not work folders")
        #expect(p.renumber == [NodeRun("a", 1)], "a never ran: its state names run 1, so its next run is 2")
    }

    @Test func onlyTheHighestUnrecordedRunOfANodeThatNeverRanNamesIt() {
        let p = plan([node("a", .ready, run: 0)], folders: ["a.2", "a.1"])
        #expect(p.unrecorded == [NodeRun("a", 1), NodeRun("a", 2)])
        #expect(p.renumber == [NodeRun("a", 2)])
    }

    @Test func withoutTheLeaseOnlyWhatThisMachineLeftIsRecordedAfterTheOtherMachinesRuns() {
        // The GPU box ran b on to run 6 meanwhile; this machine's b.3 and b.4 never reached HEAD.
        let p = plan([node("b", .runningRemote, run: 6, remote: true), node("c", .runningLocal, run: 2)],
                     folders: ["b.4", "b.3", "c.2"], holder: false, next: ["b": 7, "c": 3], ranHere: [NodeRun("c", 2)])
        #expect(p.unrecorded == [NodeRun("b", 7), NodeRun("b", 8)])
        #expect(p.follow.isEmpty && p.interrupted.isEmpty && p.renumber.isEmpty, "the holder follows and fails its own runs")
    }

    @Test func workFolderNamesParse() {
        #expect(NodeRun(workFolder: "stylize.12") == NodeRun("stylize", 12))
        #expect(NodeRun(workFolder: "a.b.3") == NodeRun("a.b", 3))
        #expect(NodeRun(workFolder: "a.99999999999") == nil, "past the run numbers")
        #expect(NodeRun(workFolder: "a") == nil)
    }
}
