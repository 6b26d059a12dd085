import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Testing

/// What `flowdir storage` reads from an instance's history.
@Suite(.tags(.medium)) struct InstanceContentTests {
    /// Runs are numbered by history's order: two runs committed within the
    /// same second (a quick rerun) were numbered by their equal times, the
    /// newer one as run 1, so `free` kept the old content as the newest run's.
    @Test func runsWithinOneSecondAreNumberedByHistory() throws {
        let dir = try TemporaryDirectory()
        let store = try InstanceStore.create(at: dir.path + "/i", clock: FlowdirClock.system.pinned(at: Timestamp(seconds: 1_800_000_000)))
        let old = try #require(LFSPointer(oid: String(repeating: "a", count: 64), size: 600_000))
        let new = try #require(LFSPointer(oid: String(repeating: "b", count: 64), size: 700_000))
        for p in [old, new] {
            try store.commit([.placed("nodes/big/out/out.bin", p.bytes)], message: CommitMessage(summary: "big", event: "test"))
        }
        try store.close()
        let c = try InstanceContent.scan(dir.path + "/i", repo: try GitRepository.open(dir.path + "/i"), remoteTip: nil, now: 1_800_000_100)
        let runs = Dictionary(uniqueKeysWithValues: c.references.map { ($0.oid, $0.run) })
        #expect(runs[old.oid] == 1 && runs[new.oid] == 2, "\(runs)")
        #expect(c.references.first { $0.oid == new.oid }?.current == true)
    }
}
