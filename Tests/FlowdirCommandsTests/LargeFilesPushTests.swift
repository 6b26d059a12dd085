import FlowdirCore
import FlowdirTestSupport
import Foundation
import Testing

/// Every push of an instance with large files carries their content first
/// (docs/storage.md), whichever path the push takes; `git lfs fsck` on
/// the hub is the oracle.
@Suite(.tags(.large), Tier.notQuick) struct LargeFilesPushTests {
    /// A run whose job outlasts half the lease renews it and pushes the
    /// renewal at once, with the large output committed before it: that
    /// push went out as a plain `git push`, the hub got the pointer without
    /// its content, and the closing sync did not send it either (the hub's
    /// branch already had the pointer).
    @Test func aLeaseRenewedMidRunPushesTheContentFirst() throws {
        let dir = try TemporaryDirectory()
        try dir.write("wf/tools/Big.yaml", """
            kind: Big
            outputs: { out: FileRef }
            run:
              command: [sh, -c, 'head -c 1048576 /dev/urandom > "$0"', "{outputs.out}"]
            """)
        try dir.write("wf/tools/Slow.yaml", """
            kind: Slow
            inputs: { in: FileRef }
            outputs: { out: TextRef }
            run:
              command: [sh, -c, 'sleep 3; sha256sum < "$1" > "$0"', "{outputs.out}", "{inputs.in}"]
            """)
        try dir.write("wf/t.yaml", """
            schema: app.workflow/v2
            name: Renewed
            nodes:
              - { id: big, kind: Big }
              - { id: slow, kind: Slow }
            edges: [big.out -> slow.in]
            """)
        // A 2 s lease: renewed (and pushed) while the 3 s job runs.
        try dir.write("config/flowdir/config.yaml", "sync: { lease: 2s }\n")
        let env = ["XDG_CONFIG_HOME": dir.path + "/config", "XDG_STATE_HOME": dir.path + "/state"]
        let hub = dir.path + "/hub.git"
        _ = try CommandRunner.run("/usr/bin/git", ["init", "--quiet", "--bare", "--initial-branch=main", hub])
        #expect(try CommandRunner.flowdir(["new", "wf/t.yaml", "a"], in: dir.path, environment: env).status == 0)
        _ = try GitCLI.run(["remote", "add", "origin", "file://" + hub], in: dir.path + "/a")
        let run = try CommandRunner.flowdir(["run", "a"], in: dir.path, environment: env)
        #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
        let log = try GitCLI.run(["log", "--format=%s"], in: hub)
        #expect(log.contains("renewed"), "no renewal was pushed: \(log)")
        // The hub has the content of every pointer it holds.
        let fsck = try CommandRunner.run("/usr/bin/git", ["-C", hub, "lfs", "fsck"])
        #expect(fsck.status == 0, "\(fsck.stdout)\(fsck.stderr)")
        #expect(!fsck.stdout.contains("openError"), "\(fsck.stdout)")
    }

    /// The hub made anew (removed, `git init --bare` again): the next sync
    /// pushes the whole history, and must send all its content. The stale
    /// remote-tracking branch made sync take the old commits (and their
    /// pointers) as already on the hub: the new hub got pointers without content.
    @Test func aHubMadeAnewGetsTheContentOfTheWholeHistory() throws {
        let i = try LargeOutputsTests.Instance()
        let hub = i.dir.path + "/hub.git"
        _ = try CommandRunner.run("/usr/bin/git", ["init", "--quiet", "--bare", "--initial-branch=main", hub])
        _ = try i.git(["remote", "add", "origin", "file://" + hub])
        #expect(try i.flowdir(["run", i.inst]).status == 0)
        #expect(try i.flowdir(["sync", i.inst]).status == 0)
        try FileManager.default.removeItem(atPath: hub)
        _ = try CommandRunner.run("/usr/bin/git", ["init", "--quiet", "--bare", "--initial-branch=main", hub])
        #expect(try i.flowdir(["rerun", i.inst, "use"]).status == 0)
        let sync = try i.flowdir(["sync", i.inst])
        #expect(sync.status == 0, "\(sync.stdout)\(sync.stderr)")
        #expect(try GitCLI.run(["rev-parse", "main"], in: hub) == (try i.git(["rev-parse", "HEAD"])))
        let fsck = try CommandRunner.run("/usr/bin/git", ["-C", hub, "lfs", "fsck"])
        #expect(fsck.status == 0 && !fsck.stdout.contains("openError"), "\(fsck.stdout)\(fsck.stderr)")
    }
}
