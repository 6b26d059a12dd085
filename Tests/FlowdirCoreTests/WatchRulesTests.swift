import FlowdirCore
import FlowdirTestSupport
import Testing

@Suite(.tags(.small)) struct WatchRulesTests {
    /// What git's porcelain writes in `.git` (and flowdir never does) shows a
    /// person's command at work; what flowdir writes there too does not.
    @Test(arguments: [
        ("FETCH_HEAD", true), ("ORIG_HEAD", true), ("ORIG_HEAD.lock", true), ("MERGE_HEAD", true), ("MERGE_MSG", true),
        ("AUTO_MERGE", true), ("COMMIT_EDITMSG", true), ("rebase-merge", true), ("rebase-apply", true),
        ("CHERRY_PICK_HEAD", true), ("REVERT_HEAD", true), ("sequencer", true),
        ("index", false), ("index.lock", false), ("HEAD", false), ("HEAD.lock", false), ("config.lock", false),
        ("objects", false), ("packed-refs", false), ("flowdir-journal", false),
    ])
    func gitCommandAtWork(_ name: String, _ atWork: Bool) {
        #expect(WatchRules.isGitCommandAtWork(name) == atWork)
    }

    @Test func theRepositoryIsWatchedButNoFileInItGivesWork() {
        #expect(WatchRules.folders(nodes: ["a"]).contains { $0 == (".git", .git) })
        #expect(!WatchRules.matters("FETCH_HEAD", in: .git, removed: false))
        #expect(WatchRules.subfolder("rebase-merge", of: .git) == nil)
        #expect(WatchRules.gitCommandStamps.allSatisfy(WatchRules.isGitCommandAtWork))
    }

    /// flowdir's own files of a node going by hand (`rm -rf nodes/x`, an
    /// output deleted) give work: they are put back. Written, they do not.
    @Test func flowdirsOwnNodeFilesMatterOnlyWhenTheyGo() {
        for name in ["state.yaml", "out", "runs"] {
            #expect(WatchRules.matters(name, in: .node("a"), removed: true), "\(name)")
            #expect(!WatchRules.matters(name, in: .node("a"), removed: false), "\(name)")
        }
        #expect(WatchRules.matters("a", in: .nodes, removed: true))
        #expect(!WatchRules.matters("a", in: .nodes, removed: false))
    }
}
