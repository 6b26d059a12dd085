import FlowdirCore
import FlowdirTestSupport
import Testing

/// What `storage free` may drop: never the last copy, never what is pinned,
/// unpushed or in use; each node's newest runs kept; oldest first.
@Suite(.tags(.small)) struct FreePlanTests {
    func ref(_ oid: String, node: String = "a", run: Int?, current: Bool = false, usedAt: Double = 0, size: Int64 = 10,
             pinned: Bool = false, unpushed: Bool = false, inUse: Bool = false) -> FreePlan.Reference {
        FreePlan.Reference(oid: oid, size: size, node: node, run: run, path: "nodes/\(node)/out/x.png", current: current, usedAt: usedAt,
                           pinned: pinned, unpushed: unpushed, inUse: inUse)
    }

    @Test func oldRunsOnTheRemoteGoOldestFirstAndTheNewestStays() {
        let refs = [ref("o1", run: 1, usedAt: 100), ref("o2", run: 2, usedAt: 50), ref("o3", run: 3, current: true, usedAt: 300)]
        let r = FreePlan.plan(refs, onRemote: ["o1", "o2", "o3"], options: .init(), now: 1000)
        #expect(r.drop.map(\.oid) == ["o2", "o1"])
        #expect(r.kept.map(\.oid) == ["o3"] && r.kept.map(\.why) == [.recentRun])
        // Keeping none: the current outputs may go too (fetched again when needed).
        #expect(FreePlan.plan(refs, onRemote: ["o1", "o2", "o3"], options: .init(keepRuns: 0), now: 1000).drop.map(\.oid) == ["o2", "o1", "o3"])
    }

    @Test func neverTheLastCopyNorWhatIsPinnedUnpushedOrInUse() {
        let refs = [ref("a", run: 1), ref("b", run: 2, pinned: true), ref("c", run: 3, unpushed: true), ref("d", node: "x", run: 1, inUse: true),
                    ref("e", node: "y", run: 1), ref("f", node: "y", run: 2)]
        let r = FreePlan.plan(refs, onRemote: ["b", "c", "d", "e", "f"], options: .init(keepRuns: 0), now: 10)
        #expect(r.drop.map(\.oid) == ["e", "f"])
        #expect(Dictionary(uniqueKeysWithValues: r.kept.map { ($0.oid, $0.why) }) == ["a": .noRemote, "b": .pinned, "c": .unpushed, "d": .inUse])
    }

    @Test func oneObjectTwoReferencesIsKeptIfEitherNeedsIt() {
        // The same bytes as an old run of one node and the current output of another.
        let refs = [ref("same", node: "a", run: 1), ref("same", node: "a", run: 2, current: true), ref("z", node: "b", run: 1),
                    ref("same", node: "b", run: 2, current: true)]
        let r = FreePlan.plan(refs, onRemote: ["same", "z"], options: .init(), now: 10)
        #expect(r.drop.map(\.oid) == ["z"])
        #expect(r.kept.first?.oid == "same")
    }

    @Test func olderThanAndToSizeStopEarly() {
        let refs = (1...5).map { ref("o\($0)", run: $0, usedAt: Double($0) * 100, size: 100) } + [ref("o6", run: 6, current: true, usedAt: 1000, size: 100)]
        let remote = Set(refs.map(\.oid))
        // Used within the last 250 s (at 1000): o4, o5 (and the newest run) stay.
        let r1 = FreePlan.plan(refs, onRemote: remote, options: .init(olderThan: 650), now: 1000)
        #expect(r1.drop.map(\.oid) == ["o1", "o2", "o3"])
        // 600 bytes held; down to 350: the three oldest go, no more.
        let r2 = FreePlan.plan(refs, onRemote: remote, options: .init(to: 350), now: 1000)
        #expect(r2.drop.map(\.oid) == ["o1", "o2", "o3"])
        #expect(r2.kept.filter { $0.why == .enough }.map(\.oid) == ["o4", "o5"])
    }
}
