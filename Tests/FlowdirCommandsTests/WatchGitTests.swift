import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// A person's git commands in a watched instance. git holds no lock from
/// the moment it reads HEAD to the moment it moves it (a fast-forward
/// writes the files and the index, lets go of the index, then updates the
/// branch), so a watcher that committed the answer a pull had just written
/// would make the pull fail with "cannot lock ref". It waits until git is done.
extension WatchCommandTests {
    @Test func aGitPullIntoAWatchedInstanceIsNeverRaced() async throws {
        try await offPool { try self.pulls() }
    }

    func pulls() throws {
        let count = 4
        let w = try Watching(template: Self.pickers("Pulls", count: count))
        try w.start()
        #expect(try w.flowdir(["new", "wf/t.yaml", "root/inst"]).status == 0)
        try w.waitFor("the questions") { (1...count).allSatisfy { w.state("p\($0)") == "awaitingUser" } }
        try w.quiet()
        let clone = w.dir.path + "/clone"
        try GitCLI.run(["clone", "-q", w.inst(), clone], in: w.dir.path)
        let png = SampleFiles.png()
        let bob = ["-c", "user.name=Bob", "-c", "user.email=bob@example.org"]
        for i in 1...count {
            // Half the pulls fast-forward (the clone caught up first), half merge.
            if i % 2 == 1 { try GitCLI.run(bob + ["pull", "-q", "--no-rebase", w.inst(), "main"], in: clone) }
            try Data(png).write(to: URL(fileURLWithPath: clone + "/inbox/p\(i).image.png"))
            try GitCLI.run(["add", "inbox/p\(i).image.png"], in: clone)
            try GitCLI.run(bob + ["commit", "-qm", "answer p\(i)"], in: clone)
            // The instance open from the last answer for some, closed again for others.
            if i % 4 >= 2 { try w.quiet(for: 2) }
            try Self.slowGit(["-c", "user.name=Ann", "-c", "user.email=ann@example.org", "pull", "-q", "--no-rebase", "--no-edit",
                              clone, "main"], in: w.inst())
            try w.waitFor("p\(i)") { w.state("p\(i)") == "succeeded" }
        }
        try w.quiet()
        #expect(try w.commits("answer") == count)
        #expect(try w.commits("reject") == 0)
        w.stop()
        try GitCLI.expectHealthy(w.inst())
    }

    /// A pull that stops on a conflict leaves the merge to the person:
    /// until they finish it, the watcher takes no answer and commits nothing
    /// there (its commit would land in the middle of their merge).
    @Test func aMergeLeftHalfWayHoldsTheInstanceUntilItIsDone() async throws {
        try await offPool { try self.halfWayMerge() }
    }

    func halfWayMerge() throws {
        let w = try Watching(template: Self.pickers("Merge", count: 1))
        try w.start()
        #expect(try w.flowdir(["new", "wf/t.yaml", "root/inst"]).status == 0)
        try w.waitFor("the question") { w.state("p1") == "awaitingUser" }
        try w.quiet()
        // The index is in step with the watcher's commits at once, not when
        // it next wakes: a person's `git commit` builds its tree from the
        // index, and would quietly undo what the watcher committed.
        #expect(try GitCLI.run(["status", "--porcelain"], in: w.inst()) == "", "git status is clean while the instance lingers open")
        let clone = w.dir.path + "/clone"
        try GitCLI.run(["clone", "-q", w.inst(), clone], in: w.dir.path)
        let ann = ["-c", "user.name=Ann", "-c", "user.email=ann@example.org"]
        for (dir, text) in [(w.inst(), "ours\n"), (clone, "theirs\n")] {
            try text.write(toFile: dir + "/notes.txt", atomically: true, encoding: .utf8)
            try GitCLI.run(["add", "notes.txt"], in: dir)
            try GitCLI.run(ann + ["commit", "-qm", "notes"], in: dir)
        }
        #expect(w.state("p1") == "awaitingUser")
        #expect(try GitCLI.run(["show", "HEAD:nodes/p1/state.yaml"], in: w.inst()).contains("state: awaitingUser"),
                "the person's commit keeps what the watcher committed")
        let pull = try CommandRunner.run("/usr/bin/git", ann + ["pull", "-q", "--no-rebase", "--no-edit", clone, "main"], in: w.inst())
        #expect(pull.status != 0, "the pull stops on the conflict")
        #expect(pull.stdout.contains("CONFLICT"), "\(pull.stdout)\(pull.stderr)")
        #expect(FileManager.default.fileExists(atPath: w.inst() + "/.git/MERGE_HEAD"))
        try Data(SampleFiles.png()).write(to: URL(fileURLWithPath: w.inst() + "/inbox/p1.image.png"))
        usleep(1_500_000)
        #expect(w.state("p1") == "awaitingUser", "no answer is taken in the middle of a merge")
        #expect(try w.commits("answer") == 0)
        #expect(w.logText().contains("a git merge is under way"))
        try "both\n".write(toFile: w.inst() + "/notes.txt", atomically: true, encoding: .utf8)
        try GitCLI.run(["add", "notes.txt"], in: w.inst())
        try GitCLI.run(ann + ["commit", "-q", "--no-edit"], in: w.inst())
        try w.waitFor("p1, once the merge is done") { w.state("p1") == "succeeded" }
        try w.quiet()
        #expect(try w.commits("answer") == 1)
        #expect(w.logText().contains("the git merge is over"))
        let parents = try GitCLI.run(["log", "-1", "--format=%P", "HEAD~1"], in: w.inst())
        #expect(parents.split(separator: " ").count == 2, "the answer is committed on top of the person's merge")
        w.stop()
        try GitCLI.expectHealthy(w.inst(), allowDangling: true)  // git's own AUTO_MERGE tree of the conflicted merge
    }

    /// git, held up 0.2 s after each rename (strace's fault injection): once
    /// after it writes the index and before it moves the branch, as a busy
    /// machine may hold it, so the window a watcher could race in is wide.
    static func slowGit(_ args: [String], in dir: String) throws {
        // scripts/setup.sh installs strace; where tracing is not allowed the pull runs as it is.
        let strace = "/usr/bin/strace"
        guard FileManager.default.isExecutableFile(atPath: strace),
              (try? CommandRunner.run(strace, ["-qq", "-o", "/dev/null", "/bin/true"]))?.status == 0 else {
            _ = try GitCLI.run(args, in: dir)
            return
        }
        let renames = "rename,renameat,renameat2"
        let r = try CommandRunner.run(strace, ["-f", "-qq", "-o", "/dev/null", "-e", "trace=" + renames,
                                               "-e", "inject=\(renames):delay_exit=200000", "/usr/bin/git"] + args, in: dir,
                                      environment: ["GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"])
        guard r.status == 0 else { throw GitCLI.Failure(description: "git \(args.joined(separator: " ")) exited \(r.status): \(r.stderr)") }
    }
}
