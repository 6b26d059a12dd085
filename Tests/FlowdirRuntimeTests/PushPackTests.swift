import FlowdirCore
import FlowdirIO
@testable import FlowdirRuntime
import FlowdirTemplates
import FlowdirTestSupport
import Foundation
import Testing

/// A sync that pushes many commits sends growing trees as deltas (see
/// `PushPack`): flowdir's merged packs hold whole objects, between which
/// git's pack-objects never tries a delta.
@Suite(.tags(.medium)) struct PushPackTests {
    @Test func aLargePushSendsGrowingTreesAsDeltas() async throws {
        let (dir, instance) = try GroupCommitTests.touches(2)
        defer { withExtendedLifetime(dir) {} }
        // A folder that gains an entry a commit, as `nodes/<id>/runs/` does a run;
        // 1,000 of them, so that flowdir merges many versions into one pack
        // (at 600 the old push still found its deltas).
        let store = try InstanceStore.open(instance, purpose: "test")
        for run in 1...1_000 {
            try store.commit([.write("nodes/t1/runs/\(run)/run.yaml", "run: \(run)\ntrigger: rerun\n")],
                             message: CommitMessage(summary: "Run \(run)", event: "test"))
        }
        try store.close()
        let packs = try FileManager.default.contentsOfDirectory(atPath: instance + "/.git/objects/pack").filter { $0.hasSuffix(".pack") }
        #expect(packs.count < 100, "flowdir merged its packs: \(packs.count)")

        let hub = dir.path + "/hub.git"
        try GitCLI.run(["init", "--quiet", "--bare", "--initial-branch=main", hub], in: dir.path)
        try GitCLI.run(["remote", "add", "origin", "file://" + hub], in: instance)
        let report = try await Syncer().sync(instance)
        #expect(report.outgoing >= PushPack.commitThreshold)

        // What the hub got, against the same objects packed by git at its best.
        func packBytes(_ repo: String) throws -> Int {
            try FileManager.default.contentsOfDirectory(atPath: repo + "/objects/pack").filter { $0.hasSuffix(".pack") }
                .reduce(0) { $0 + ((try FileManager.default.attributesOfItem(atPath: repo + "/objects/pack/" + $1)[.size] as? Int) ?? 0) }
        }
        let best = dir.path + "/best.git"
        try GitCLI.run(["clone", "--quiet", "--bare", "--no-local", hub, best], in: dir.path)
        try GitCLI.run(["repack", "-a", "-d", "-f", "-q"], in: best)
        let sent = try packBytes(hub), ideal = try packBytes(best)
        #expect(sent < ideal * 3 / 2, "the hub's pack is \(sent) bytes; git packs the same objects in \(ideal)")
        try GitCLI.expectHealthy(instance)
    }
}
