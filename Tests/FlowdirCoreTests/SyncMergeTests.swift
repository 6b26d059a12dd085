@testable import FlowdirCore
import FlowdirTestSupport
import Testing

/// The merge rules of docs/commands.md ("Sync between machines") on file maps:
/// blob ids are the files' texts here, so `read` is the identity.
@Suite(.tags(.small)) struct SyncMergeTests {
    func merge(_ base: [String: String], _ ours: [String: String], _ theirs: [String: String]) -> SyncMerge.Outcome {
        SyncMerge.merge(base: base, ours: ours, theirs: theirs) { Array($0.utf8) }
    }

    func state(_ s: String, run: Int) -> String { "state: \(s)\nrun: \(run)\nupdatedAt: 2026-11-25T00:00:00Z\n" }
    func text(_ a: SyncMerge.Action?) -> String? {
        switch a {
        case .blob(let b)?: b
        case .bytes(let b)?: String(decoding: b, as: UTF8.self)
        case .delete?: "<deleted>"
        case nil: nil
        }
    }

    @Test func aChangeOnOneSideIsTakenAndSameChangesAreNothing() {
        let base = ["a": "1", "b": "1", "c": "1"]
        let out = merge(base, ["a": "2", "b": "1", "c": "3"], ["a": "2", "b": "4", "d": "5"])
        #expect(text(out.changes["b"]) == "4")
        #expect(text(out.changes["d"]) == "5")
        #expect(out.changes["a"] == nil && out.changes["c"] == nil)  // same change; ours changed, theirs deleted: kept
        #expect(out.notes.isEmpty)
    }

    /// Large files marked on both machines stay marked: `.gitattributes` is
    /// merged line by line, never set aside as a `.conflict`.
    @Test func largeFileLinesFromBothMachinesAreKept() {
        let head = "# Large files, kept as Git LFS pointers (flowdir writes these lines)\n"
        let base = [".gitattributes": head + "/nodes/a/out/x.bin filter=lfs diff=lfs merge=lfs -text\n"]
        let ours = [".gitattributes": head + "/nodes/a/out/x.bin filter=lfs diff=lfs merge=lfs -text\n/nodes/b/out/y.bin filter=lfs diff=lfs merge=lfs -text\n"]
        let theirs = [".gitattributes": head + "/nodes/c/out/z.bin filter=lfs diff=lfs merge=lfs -text\n"]
        let out = merge(base, ours, theirs)
        // Theirs removed a's line (its output became small there); each side's new line stays.
        #expect(text(out.changes[".gitattributes"]) == head + "/nodes/b/out/y.bin filter=lfs diff=lfs merge=lfs -text\n/nodes/c/out/z.bin filter=lfs diff=lfs merge=lfs -text\n")
        #expect(out.changes[".gitattributes.conflict"] == nil && out.notes.isEmpty)
    }

    @Test func stateGoesToTheHigherRunThenTheLaterStateWithItsOutputs() {
        let base = ["nodes/n/state.yaml": state("ready", run: 0)]
        let ours = ["nodes/n/state.yaml": state("runningLocal", run: 1), "nodes/n/runs/1/run.yaml": "run: 1\ntrigger: auto\n"]
        var theirs = ours
        theirs["nodes/n/state.yaml"] = state("succeeded", run: 1)
        theirs["nodes/n/out/o.txt"] = "made"
        let out = merge(base, ours, theirs)
        #expect(text(out.changes["nodes/n/state.yaml"]) == state("succeeded", run: 1))
        #expect(text(out.changes["nodes/n/out/o.txt"]) == "made")
        // The other way round, ours stays.
        let back = merge(base, theirs, ours)
        #expect(back.changes["nodes/n/state.yaml"] == nil)
    }

    @Test func runNumbersGivenOnBothMachinesAreBothKeptTheirsRenumbered() {
        let base = ["nodes/n/state.yaml": state("succeeded", run: 1), "nodes/n/runs/1/run.yaml": "run: 1\ntrigger: auto\n"]
        var ours = base, theirs = base
        ours["nodes/n/state.yaml"] = state("succeeded", run: 2)
        ours["nodes/n/runs/2/run.yaml"] = "run: 2\ntrigger: rerun\nhost: a\n"
        ours["nodes/n/runs/2/log.txt"] = "ours"
        theirs["nodes/n/state.yaml"] = state("failed", run: 2)
        theirs["nodes/n/runs/2/run.yaml"] = "run: 2\ntrigger: rerun\nhost: b\n"
        theirs["nodes/n/runs/2/log.txt"] = "theirs"
        let out = merge(base, ours, theirs)
        #expect(text(out.changes["nodes/n/runs/3/run.yaml"]) == "run: 3\ntrigger: rerun\nhost: b\n")
        #expect(text(out.changes["nodes/n/runs/3/log.txt"]) == "theirs")
        #expect(out.changes["nodes/n/runs/2/run.yaml"] == nil && out.changes["nodes/n/runs/2/log.txt"] == nil)
        // Renumbered, theirs is the later run: its state is taken, saying run 3.
        #expect(text(out.changes["nodes/n/state.yaml"]) == state("failed", run: 3))
        #expect(out.notes.contains("n: run 2 from the other machine kept as run 3 (both machines ran a run 2)"))
    }

    @Test func paramsEditedOnBothKeepOursAndTheirsBeside() {
        let base = ["nodes/n/params.yaml": "sigma: 1\n", "nodes/n/state.yaml": state("succeeded", run: 1)]
        var ours = base, theirs = base
        ours["nodes/n/params.yaml"] = "sigma: 2\n"
        theirs["nodes/n/params.yaml"] = "sigma: 3\n"
        let out = merge(base, ours, theirs)
        #expect(out.changes["nodes/n/params.yaml"] == nil)
        #expect(text(out.changes["nodes/n/params.conflict.yaml"]) == "sigma: 3\n")
        #expect(out.paramsConflicts == ["n"])
    }

    @Test func anAwaitAnsweredOnBothKeepsThePushedOneAndOursBesideWithWhy() {
        let base = ["nodes/m/state.yaml": state("awaitingUser", run: 0), "inbox/m.await.yaml": "q"]
        var ours = base, theirs = base
        for (side, answer) in [(0, "ours-png"), (1, "theirs-png")] {
            var files = base
            files["inbox/m.await.yaml"] = nil
            files["nodes/m/state.yaml"] = state("succeeded", run: 1)
            files["nodes/m/runs/1/run.yaml"] = "run: 1\ntrigger: answer\nuser: \(side)\n"
            files["nodes/m/out/mask.png"] = answer
            if side == 0 { ours = files } else { theirs = files }
        }
        let out = merge(base, ours, theirs)
        #expect(text(out.changes["nodes/m/out/mask.png"]) == "theirs-png")
        #expect(text(out.changes["nodes/m/runs/1/run.yaml"]) == "run: 1\ntrigger: answer\nuser: 1\n")
        #expect(text(out.changes["inbox/m.mask.png.conflict"]) == "ours-png")
        #expect(text(out.changes["inbox/m.error.txt"])?.contains("answered on two machines") == true)
        #expect(out.changes["nodes/m/runs/2/run.yaml"] == nil)
    }

    @Test func anyOtherFileChangedOnBothKeepsOursAndTheirsBesideAndNothingDeletedIsLost() {
        let base = ["notes.md": "a", "gone-here.md": "a", "gone-there.md": "a"]
        let ours = ["notes.md": "ours", "gone-there.md": "edited"]
        let theirs = ["notes.md": "theirs", "gone-here.md": "edited"]
        let out = merge(base, ours, theirs)
        #expect(out.changes["notes.md"] == nil)
        #expect(text(out.changes["notes.md.conflict"]) == "theirs")
        #expect(text(out.changes["gone-here.md"]) == "edited")
        #expect(out.changes["gone-there.md"] == nil)
    }

    @Test func conflictFilesInTheInboxAreLeftAlone() {
        #expect(InboxName.classify("m.mask.png.conflict") == .ignored)
    }

    @Test func instanceFileKeysMergeOneByOneAndTheLeasePushedFirstWins() {
        let head = "# A flowdir instance.\nid: x\ntitle: T\npolling: active\n"
        let base = ["instance.yaml": head]
        let ours = ["instance.yaml": "# A flowdir instance.\nid: x\ntitle: Mine\npolling: active\nlease:\n  host: laptop\n  until: 2026-01-01T00:10:00Z\n"]
        let theirs = ["instance.yaml": "# A flowdir instance.\nid: x\ntitle: T\npolling: paused\nlease:\n  host: gpu\n  until: 2026-01-01T00:09:00Z\n"]
        let out = merge(base, ours, theirs)
        #expect(text(out.changes["instance.yaml"]) == "# A flowdir instance.\nid: x\ntitle: Mine\npolling: paused\nlease:\n  host: gpu\n  until: 2026-01-01T00:09:00Z\n")
        #expect(out.notes.contains("lease: the other machine's, pushed first, kept"))
    }
}
