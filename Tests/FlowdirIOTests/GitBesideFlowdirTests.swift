import FlowdirCore
@testable import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// A person's git beside flowdir's commits: git's own commands must never
/// undo what flowdir committed, lose its objects, or find HEAD and the
/// files apart after a commit that failed.
@Suite(.tags(.medium)) struct GitBesideFlowdirTests {
    let message = CommitMessage(summary: "step", event: "test")
    let person = ["-c", "user.name=Ann", "-c", "user.email=ann@example.org"]

    /// flowdir writes the index with each commit and lets git's lock go at
    /// once: a person's `git add` and `git commit` between flowdir's commits
    /// go through, carry only their file, and never undo flowdir's commit;
    /// flowdir's next commit builds on theirs.
    @Test func aPersonsCommitBetweenFlowdirsGoesThroughAndUndoesNothing() throws {
        let dir = try TemporaryDirectory()
        let store = try InstanceStore.create(at: dir.path + "/inst")
        try store.commit([.write("nodes/a/state.yaml", "state: ready\n")], message: message)
        try store.commit([.write("nodes/a/state.yaml", "state: succeeded\n"), .write("nodes/a/out/x.txt", "x\n")], message: message)
        // No flush asked for: the index is in step already, and git's lock is free.
        #expect(!FileManager.default.fileExists(atPath: store.path + "/.git/index.lock"))
        #expect(try GitCLI.run(["status", "--porcelain"], in: store.path) == "")
        try Data("mine\n".utf8).write(to: URL(fileURLWithPath: store.path + "/NOTES.md"))
        try GitCLI.run(["add", "NOTES.md"], in: store.path)
        // Staged but not committed: flowdir's commit keeps the person's staged file staged.
        try store.commit([.write("nodes/b/state.yaml", "state: ready\n")], message: message)
        #expect(try GitCLI.run(["diff", "--cached", "--name-only"], in: store.path) == "NOTES.md\n")
        try GitCLI.run(person + ["commit", "-qm", "notes"], in: store.path)
        let changed = try GitCLI.run(["show", "--name-only", "--format=", "HEAD"], in: store.path)
        #expect(changed == "NOTES.md\n")
        #expect(try GitCLI.run(["show", "HEAD:nodes/a/state.yaml"], in: store.path) == "state: succeeded\n")
        #expect(try GitCLI.run(["show", "HEAD:nodes/b/state.yaml"], in: store.path) == "state: ready\n")
        // flowdir builds on the person's commit.
        try store.commit([.write("nodes/a/state.yaml", "state: ready\n")], message: message)
        #expect(try GitCLI.run(["log", "--format=%s", "-3"], in: store.path) == "step\nnotes\nstep\n")
        try store.close()
        try GitCLI.expectHealthy(store.path)
        #expect(try GitCLI.run(["show", "HEAD:NOTES.md"], in: store.path) == "mine\n")
    }

    /// A flowdir killed while it held the index lock leaves it: the next
    /// open removes it (git's own lock it leaves alone).
    @Test func aLockAFlowdirLeftIsRemovedOnOpenAndGitsIsNot() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/inst"
        do {
            let store = try InstanceStore.create(at: path)
            try store.commit([.write("a.txt", "a\n")], message: message)
            try store.close()
        }
        try Data("flowdir 999999: flowdir's commits are ahead of the index\n".utf8).write(to: URL(fileURLWithPath: path + "/.git/index.lock"))
        try InstanceStore.open(path, purpose: "test").close()
        #expect(!FileManager.default.fileExists(atPath: path + "/.git/index.lock"))
        // git's own: a commit waits for it, then fails naming the file, and keeps its changes.
        try Data("DIRC".utf8).write(to: URL(fileURLWithPath: path + "/.git/index.lock"))
        let store = try InstanceStore.open(path, purpose: "test")
        store.gitLockTimeout = 0.05
        let error = #expect(throws: CommitFailure.self) { try store.commit([.write("b.txt", "b\n")], message: message) }
        #expect(error?.description.contains(path + "/.git/index.lock") == true)
        #expect(error?.hint.contains("lock") == true)
        #expect(store.hasFailedWrites)
        #expect(FileManager.default.fileExists(atPath: path + "/.git/index.lock"))
        try FileManager.default.removeItem(atPath: path + "/.git/index.lock")
        try store.retryFailedWrites()
        #expect(!store.hasFailedWrites)
        try store.close()
        try GitCLI.expectHealthy(path)
        #expect(try GitCLI.run(["show", "HEAD:b.txt"], in: path) == "b\n")
    }

    /// `git repack -a -d` deletes every pack it did not keep whole; a pack
    /// flowdir wrote for a commit it has not yet made holds objects no ref
    /// reaches, so it has a `.keep` until the commit is made.
    @Test func aCommitsPackIsKeptUntilARefReachesIt() throws {
        let dir = try TemporaryDirectory()
        let store = try InstanceStore.create(at: dir.path + "/inst")
        try store.commit([.write("a.txt", "a\n")], message: message)
        let repo = store.repository
        let blob = try repo.batchingObjects {
            let id = try repo.writeBlob(Array("pending\n".utf8))
            try repo.objects().flushBatch()
            return id
        }
        let packDir = store.path + "/.git/objects/pack"
        var keeps = try FileManager.default.contentsOfDirectory(atPath: packDir).filter { $0.hasSuffix(".keep") }
        #expect(keeps.count == 1)
        // git's own repack, as gc runs it: the pending object survives.
        try GitCLI.run(["repack", "-adq"], in: store.path)
        #expect(repo.contains(blob))
        #expect(try GitCLI.run(["cat-file", "-t", blob.hex], in: store.path) == "blob\n")
        // A commit that reaches it: the keep goes.
        try store.commit([.write("b.txt", "pending\n")], message: message)
        keeps = try FileManager.default.contentsOfDirectory(atPath: packDir).filter { $0.hasSuffix(".keep") }
        #expect(keeps.isEmpty)
        try store.close()
        try GitCLI.run(["repack", "-adfq"], in: store.path)
        try GitCLI.expectHealthy(store.path)
    }

    /// A commit that fails (here git holds the branch's lock) leaves HEAD
    /// and the files apart only until it can be made: it is made, in
    /// order, before the next one; if flowdir stops first, the next open
    /// puts the files back as HEAD has them.
    @Test func aFailedCommitIsMadeLaterOrItsFilesPutBack() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/inst"
        let store = try InstanceStore.create(at: path)
        store.gitLockTimeout = 0.05  // git's lock is waited for this long, then the commit fails
        try store.commit([.write("nodes/a/state.yaml", "state: ready\n")], message: message)
        try store.flushIndex()
        let refLock = path + "/.git/refs/heads/main.lock"
        try Data().write(to: URL(fileURLWithPath: refLock))
        let error = #expect(throws: CommitFailure.self) {
            try store.commit([.write("nodes/a/state.yaml", "state: running\n")], message: CommitMessage(summary: "first", event: "test"))
        }
        #expect(error?.description.contains("main.lock") == true, "\(String(describing: error))")
        #expect(error?.description.hasSuffix(": ") == false)
        // The next commit is kept behind it.
        #expect(throws: CommitFailure.self) {
            try store.commit([.write("nodes/b/state.yaml", "state: ready\n")], message: CommitMessage(summary: "second", event: "test"))
        }
        try FileManager.default.removeItem(atPath: refLock)
        try store.commit([.write("nodes/c/state.yaml", "state: ready\n")], message: CommitMessage(summary: "third", event: "test"))
        try store.close()
        // A commit libgit2 wrote before the ref's lock stopped it may dangle, as git's own would.
        try GitCLI.expectHealthy(path, allowDangling: true)
        #expect(try GitCLI.run(["log", "--format=%s", "-3"], in: path) == "third\nsecond\nfirst\n")
        #expect(try GitCLI.run(["show", "HEAD:nodes/a/state.yaml"], in: path) == "state: running\n")

        // Still failing when flowdir stops: the files go back as HEAD has them.
        let again = try InstanceStore.open(path, purpose: "test")
        again.gitLockTimeout = 0.05
        try Data().write(to: URL(fileURLWithPath: refLock))
        #expect(throws: CommitFailure.self) {
            try again.commit([.write("nodes/a/state.yaml", "state: succeeded\n"), .write("nodes/a/out/x.txt", "x\n")], message: message)
        }
        try? again.close()
        try FileManager.default.removeItem(atPath: refLock)
        try InstanceStore.open(path, purpose: "test").close()
        // The commit libgit2 wrote before the ref's lock stopped it dangles, as git's own would.
        try GitCLI.expectHealthy(path, allowDangling: true)
        #expect(try String(contentsOfFile: path + "/nodes/a/state.yaml", encoding: .utf8) == "state: running\n")
        #expect(!FileManager.default.fileExists(atPath: path + "/nodes/a/out/x.txt"))
    }

    /// A person's edit being committed when flowdir stops is theirs: the
    /// next open brings its index entry in step and leaves the file as it is.
    @Test func aPersonsEditIsNeverPutBackAfterACrash() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/inst"
        let store = try InstanceStore.create(at: path)
        try store.commit([.write("nodes/a/params.yaml", "steps: 1\n")], message: message)
        try store.close()
        try Data("steps: 2\n".utf8).write(to: URL(fileURLWithPath: path + "/nodes/a/params.yaml"))
        // As flowdir's journal has it when it dies mid-commit of the edit.
        try Data("=nodes/a/params.yaml\n".utf8).write(to: URL(fileURLWithPath: path + "/.flowdir/journal"))
        try InstanceStore.open(path, purpose: "test").close()
        #expect(try String(contentsOfFile: path + "/nodes/a/params.yaml", encoding: .utf8) == "steps: 2\n")
        #expect(try GitCLI.run(["status", "--porcelain"], in: path) == " M nodes/a/params.yaml\n")
    }

    /// HEAD naming a branch with no commit (deleted, misspelled): flowdir
    /// refuses to open it for writing, naming the branch to switch to,
    /// instead of starting a history without the instance's files.
    @Test func aHeadOnAMissingBranchIsRefusedNotStartedAfresh() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/inst"
        let store = try InstanceStore.create(at: path)
        try store.commit([.write("instance.yaml", "id: x\n")], message: message)
        try store.close()
        try GitCLI.run(["symbolic-ref", "HEAD", "refs/heads/mian"], in: path)
        let error = #expect(throws: InstanceError.self) { try InstanceStore.open(path, purpose: "test") }
        #expect(error?.description.contains("HEAD names branch 'mian'") == true)
        #expect(error?.description.contains("git -C \(path) switch main") == true)
        #expect(try GitCLI.run(["rev-list", "--all", "--count"], in: path) == "1\n")
        // The lock was let go: once HEAD is right again, it opens.
        try GitCLI.run(["symbolic-ref", "HEAD", "refs/heads/main"], in: path)
        try InstanceStore.open(path, purpose: "test").close()
    }

    /// An instance with one commit (`a.txt`), its waits timed on a clock the
    /// test moves, and git's lock on its branch held, as by a git command
    /// at work; returns the lock's path, for the test to let it go.
    func storeWithItsBranchLocked(_ dir: TemporaryDirectory) throws -> (InstanceStore, ManualClock, String) {
        let clock = ManualClock()
        let store = try InstanceStore.create(at: dir.path + "/inst", clock: clock.flowdirClock)
        try store.commit([.write("a.txt", "a\n")], message: message)
        let refLock = store.path + "/.git/refs/heads/main.lock"
        try Data().write(to: URL(fileURLWithPath: refLock))
        return (store, clock, refLock)
    }

    /// git's lock on the branch, held for a moment (a person's commit, `git
    /// gc` packing refs), is waited for: the commit is made once it goes.
    @Test func aBranchLockHeldForAMomentIsWaitedFor() async throws {
        let dir = try TemporaryDirectory()
        let (store, clock, refLock) = try storeWithItsBranchLocked(dir)
        let message = self.message
        nonisolated(unsafe) let unsafeStore = store
        // On a thread of its own: its wait blocks that thread until the clock moves.
        async let commit: Void = offPool { try unsafeStore.commit([.write("b.txt", "b\n")], message: message) }
        // Waiting for git's lock, backing off: twice, and not done.
        try await clock.waitForSleepers(1)
        clock.advanceToNextDeadline()
        try await clock.waitForSleepers(1)
        #expect(try !GitCLI.run(["ls-tree", "--name-only", "HEAD"], in: store.path).contains("b.txt"))
        unlink(refLock)
        clock.advanceToNextDeadline()
        try await commit
        #expect(!store.hasFailedWrites)
        try store.close()
        try GitCLI.expectHealthy(store.path, allowDangling: true)
        #expect(try GitCLI.run(["show", "HEAD:b.txt"], in: store.path) == "b\n")
    }

    /// `git commit` reads HEAD, then the index without git's lock (it takes
    /// the lock only to write). flowdir writes a commit's index entries
    /// before HEAD moves, holding the lock in between: a person's commit in
    /// that moment is refused, and none ever builds on the new HEAD from an
    /// index behind it (which would undo flowdir's commit). Here the moment
    /// is held open by git's branch lock, which flowdir waits for.
    @Test func theIndexHoldsACommitBeforeHeadMoves() async throws {
        let dir = try TemporaryDirectory()
        let (store, clock, refLock) = try storeWithItsBranchLocked(dir)
        let message = self.message
        nonisolated(unsafe) let unsafeStore = store
        async let commit: Void = offPool { try unsafeStore.commit([.write("b.txt", "b\n")], message: message) }
        try await clock.waitForSleepers(1)
        // The index has b.txt, HEAD not yet.
        #expect(try GitCLI.run(["ls-files"], in: store.path) == "a.txt\nb.txt\n")
        #expect(try GitCLI.run(["ls-tree", "--name-only", "HEAD"], in: store.path) == "a.txt\n")
        // A person's add or commit now is refused, and changes nothing.
        try Data("mine\n".utf8).write(to: URL(fileURLWithPath: store.path + "/NOTES.md"))
        let add = try CommandRunner.run("/usr/bin/git", ["add", "NOTES.md"], in: store.path)
        #expect(add.status != 0 && add.stderr.contains("index.lock"))
        let commitByHand = try CommandRunner.run("/usr/bin/git", person + ["commit", "-qam", "mine"], in: store.path)
        #expect(commitByHand.status != 0 && commitByHand.stderr.contains("index.lock"))
        unlink(refLock)
        clock.advanceToNextDeadline()
        try await commit
        #expect(try GitCLI.run(["log", "--format=%s"], in: store.path) == "step\nstep\n")
        #expect(try GitCLI.run(["status", "--porcelain"], in: store.path) == "?? NOTES.md\n")
        // Once flowdir's commit is made, theirs goes through, with their file only.
        try GitCLI.run(["add", "NOTES.md"], in: store.path)
        try GitCLI.run(person + ["commit", "-qm", "mine"], in: store.path)
        #expect(try GitCLI.run(["show", "--name-only", "--format=", "HEAD"], in: store.path) == "NOTES.md\n")
        try store.close()
        try GitCLI.expectHealthy(store.path, allowDangling: true)
    }

    /// `git commit` reads the index before it takes git's lock, and writes
    /// what it read: a commit of flowdir's between a person's `git add` and
    /// their `git commit` would be taken out of git's index, and so out of
    /// their next commit. `flowdir run`'s commits (made on the store's
    /// thread) wait until the person's git has been quiet for a moment.
    @Test func aBackgroundCommitWaitsForAPersonsAddToBeFollowedByTheirCommit() async throws {
        let dir = try TemporaryDirectory()
        let clock = ManualClock()
        let store = try InstanceStore.create(at: dir.path + "/inst", clock: clock.flowdirClock)
        try store.commit([.write("a.txt", "a\n")], message: message)
        try Data("mine\n".utf8).write(to: URL(fileURLWithPath: store.path + "/NOTES.md"))
        try GitCLI.run(["add", "NOTES.md"], in: store.path)
        try store.commitInBackground([.write("nodes/a/state.yaml", "state: ready\n")], message: message)
        // It waits, git's lock free: the person's commit goes through, with their file only.
        try await clock.waitForSleepers(1)
        #expect(!FileManager.default.fileExists(atPath: store.path + "/.git/index.lock"))
        try GitCLI.run(person + ["commit", "-qm", "notes"], in: store.path)
        #expect(try GitCLI.run(["show", "--name-only", "--format=", "HEAD"], in: store.path) == "NOTES.md\n")
        // Once their git is quiet, flowdir's commit is made on theirs.
        let path = store.path
        try await clock.advance(until: { (try? GitCLI.run(["log", "--format=%s"], in: path)) == "step\nnotes\nstep\n" })
        try store.waitForBackgroundCommits()
        #expect(try GitCLI.run(["status", "--porcelain"], in: store.path) == "")
        try store.close()
        try GitCLI.expectHealthy(store.path, allowDangling: true)
    }
}
