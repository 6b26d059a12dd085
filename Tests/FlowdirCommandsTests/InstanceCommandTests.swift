import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// `new`, `ls`, `show`, `history`, `rollback`, `duplicate`, `archive`,
/// `delete`, end to end with the built binary, checked with the git CLI.
@Suite(.tags(.large), Tier.notQuick) struct InstanceCommandTests {
    let seed = RepositoryPaths.workflows + "/stylize-with-mask.jsonc"
    let env = ["XDG_CONFIG_HOME": "/nonexistent", "FLOWDIR_CONFIG": ""]

    func flowdir(_ args: [String], in dir: String) throws -> CommandResult {
        try CommandRunner.flowdir(args, in: dir, environment: env)
    }

    @Test func newMakesAValidCleanCloneableRepository() throws {
        let dir = try TemporaryDirectory()
        let r = try flowdir(["new", seed, "photo", "--title", "My photo", "--set", "stylize1.steps=40", "--set", "compress1.targetMB=1.5"], in: dir.path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "Created 'My photo' in photo: 4 nodes, 1 ready, 3 blocked\n  next: flowdir show photo\n")
        let path = dir.path + "/photo"
        try GitCLI.expectHealthy(path)
        #expect(try GitCLI.run(["log", "--format=%an <%ae>|%s"], in: path) == "flowdir <flowdir@\(Host.name)>|Create 'My photo' from stylize-with-mask.jsonc\n")
        #expect(try GitCLI.run(["ls-files"], in: path) == """
            instance.yaml
            nodes/compress1/params.yaml
            nodes/compress1/state.yaml
            nodes/load1/params.yaml
            nodes/load1/state.yaml
            nodes/mask1/params.yaml
            nodes/mask1/state.yaml
            nodes/stylize1/params.yaml
            nodes/stylize1/state.yaml
            workflow.yaml

            """)
        #expect(try String(contentsOfFile: path + "/.git/info/exclude", encoding: .utf8).contains("/.flowdir/"))
        #expect(FileManager.default.fileExists(atPath: path + "/inbox"))
        let params = try String(contentsOfFile: path + "/nodes/stylize1/params.yaml", encoding: .utf8)
        #expect(params.hasSuffix("steps: 40\ncfg: 4.0\nstyle: sketch\n"))
        let state = try String(contentsOfFile: path + "/nodes/stylize1/state.yaml", encoding: .utf8)
        #expect(state.contains("state: blocked\nreason: Waiting for 'image' from 'load1'\nrun: 0\n"))
        // git clone of the instance works, and the clone is a valid instance.
        try GitCLI.run(["clone", "-q", path, dir.path + "/clone"], in: dir.path)
        try GitCLI.expectHealthy(dir.path + "/clone")
        let check = try flowdir(["check", "clone"], in: dir.path)
        #expect(check.status == 0, "\(check.stdout)")
    }

    /// `new` leaves the workflow compiled in `.flowdir/cache/workflow`
    /// (never committed); `run`, which names the instance by its full path,
    /// and `show` read it rather than write it again.
    @Test func newLeavesAWorkflowCacheThatRunAndShowRead() throws {
        let dir = try TemporaryDirectory()
        #expect(try flowdir(["new", seed, "photo"], in: dir.path).status == 0)
        let cache = dir.path + "/photo/.flowdir/cache/workflow"
        let inode = { () throws -> Int in
            try #require(FileManager.default.attributesOfItem(atPath: cache)[.systemFileNumber] as? Int)
        }
        let written = try inode()
        #expect(try flowdir(["run", "photo"], in: dir.path).status == 2)  // it waits for a mask
        #expect(try flowdir(["show", "photo"], in: dir.path).status == 0)
        #expect(try flowdir(["show", "./photo/"], in: dir.path).status == 0)
        #expect(try inode() == written)
        #expect(try GitCLI.run(["status", "--porcelain", "--ignored"], in: dir.path + "/photo") == "!! .flowdir/\n")
    }

    /// A clone has git's exclude file, not flowdir's: reading it leaves
    /// nothing, and running it keeps its .flowdir/ out of git.
    @Test func aClonedInstanceKeepsFlowdirOutOfGit() throws {
        let dir = try TemporaryDirectory()
        #expect(try flowdir(["new", seed, "photo"], in: dir.path).status == 0)
        try GitCLI.run(["clone", "-q", dir.path + "/photo", dir.path + "/clone"], in: dir.path)
        let clone = dir.path + "/clone"
        #expect(try flowdir(["show", "clone"], in: dir.path).status == 0)
        #expect(try GitCLI.run(["status", "--porcelain", "--ignored"], in: clone) == "")
        #expect(try flowdir(["run", "clone"], in: dir.path).status == 2)  // it waits for a mask
        #expect(try GitCLI.run(["status", "--porcelain"], in: clone) == "")
        #expect(try GitCLI.run(["status", "--porcelain", "--ignored"], in: clone) == "!! .flowdir/\n")
    }

    @Test func anInvalidTemplateOrSettingLeavesNothingBehind() throws {
        let dir = try TemporaryDirectory()
        let bad = RepositoryPaths.root + "/Tests/FlowdirTemplatesTests/Fixtures/invalid/cycle-three.yaml"
        var r = try flowdir(["new", bad, "x"], in: dir.path)
        #expect(r.status == 1)
        #expect(r.stderr.contains("error[cycleDetected]"))
        #expect(r.stderr.contains("is invalid; nothing was created"))
        r = try flowdir(["new", seed, "y", "--set", "stylize1.steps=9000"], in: dir.path)
        #expect(r.status == 1)
        #expect(r.stderr.contains("--set stylize1.steps=9000: 'steps' is 9000, above the maximum 150"))
        r = try flowdir(["new", seed, "z", "--set", "stylise1.steps=3"], in: dir.path)
        #expect(r.stderr.contains("there is no node 'stylise1'; did you mean 'stylize1'?"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).isEmpty)
        // An existing folder with something in it is not overwritten.
        try dir.write("taken/file.txt", "mine")
        r = try flowdir(["new", seed, "taken"], in: dir.path)
        #expect(r.status == 1)
        #expect(r.stderr.contains("taken already exists"))
        #expect(try String(contentsOfFile: dir.path + "/taken/file.txt", encoding: .utf8) == "mine")
    }

    @Test func templatesAreFoundByName() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createSymbolicLink(atPath: dir.path + "/workflows", withDestinationPath: RepositoryPaths.workflows)
        let r = try flowdir(["new", "parallel-variants"], in: dir.path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasPrefix("Created 'Parallel variants' in parallel-variants:"))
        let again = try flowdir(["new", "parallel-variants"], in: dir.path)
        #expect(again.stdout.hasPrefix("Created 'Parallel variants' in parallel-variants-2:"))
        let typo = try flowdir(["new", "paralel-variants"], in: dir.path)
        #expect(typo.stderr.contains("did you mean 'parallel-variants'?"))
    }

    @Test func lsShowAndTheirJSON() throws {
        let dir = try TemporaryDirectory()
        _ = try flowdir(["new", seed, "a", "--title", "Alpha"], in: dir.path)
        _ = try flowdir(["new", RepositoryPaths.workflows + "/describe-image.json", "b", "--title", "Beta"], in: dir.path)
        var r = try flowdir(["ls", "--sort", "name"], in: dir.path)
        #expect(r.status == 0)
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines[0].hasPrefix("TITLE  STATUS  STEPS  UPDATED   AWAITS  PATH"))
        #expect(lines[1].hasPrefix("Alpha  ready   0/4    just now"))
        #expect(lines[2].hasPrefix("Beta   ready   0/3    just now"))
        r = try flowdir(["ls", "--json", "--search", "bet"], in: dir.path)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])
        #expect(rows.map { $0["title"] as? String } == ["Beta"])
        #expect(rows[0]["steps"] as? String == "0/3")
        r = try flowdir(["ls", "--filter", "done"], in: dir.path)
        #expect(r.stdout.hasPrefix("No instances"))
        r = try flowdir(["show", "Alpha"], in: dir.path)
        #expect(r.status == 0)
        #expect(r.stdout.contains("· stylize1   StylizeRemote   blocked — Waiting for 'image' from 'load1'\n"))
        #expect(r.stdout.contains("steps=30 · cfg=4.0 · remote"))
        r = try flowdir(["show", "b", "--json"], in: dir.path)
        let report = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let nodes = try #require(report["nodes"] as? [[String: Any]])
        #expect(nodes.map { $0["id"] as? String } == ["load", "stats", "report"])
        #expect(nodes.map { $0["state"] as? String } == ["ready", "blocked", "blocked"])
        #expect(nodes[2]["digest"] as? String == "title=Image report")
        r = try flowdir(["show", "nothing-like-it"], in: dir.path)
        #expect(r.status == 1)
        #expect(r.stderr.hasPrefix("flowdir: error: no instance 'nothing-like-it'"))
    }

    @Test func rollbackRestoresExactlyAsANewCommit() throws {
        let dir = try TemporaryDirectory()
        _ = try flowdir(["new", seed, "p"], in: dir.path)
        let path = dir.path + "/p"
        let first = try GitCLI.run(["rev-parse", "HEAD"], in: path).trimmingCharacters(in: .whitespacesAndNewlines)
        // A person edits params twice; each edit is committed as theirs when flowdir next opens the instance.
        try dir.write("p/nodes/stylize1/params.yaml", "steps: 50\ncfg: 7.5\n")
        _ = try flowdir(["archive", "p"], in: dir.path)
        try dir.write("p/nodes/stylize1/params.yaml", "steps: 99\n")
        _ = try flowdir(["archive", "p", "--undo"], in: dir.path)
        try GitCLI.expectHealthy(path)
        let before = try GitCLI.run(["rev-list", "HEAD"], in: path)
        #expect(before.split(separator: "\n").count == 5)
        let r = try flowdir(["rollback", "p", String(first.prefix(10))], in: dir.path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("Rolled p back to \(first.prefix(12))"))
        try GitCLI.expectHealthy(path)
        // Every file exactly as at the first commit…
        #expect(try GitCLI.run(["diff", "--stat", first, "HEAD"], in: path) == "")
        #expect(try String(contentsOfFile: path + "/nodes/stylize1/params.yaml", encoding: .utf8)
                == (try GitCLI.run(["show", "\(first):nodes/stylize1/params.yaml"], in: path)))
        // …as one new commit on top: nothing rewritten.
        let after = try GitCLI.run(["rev-list", "HEAD"], in: path)
        #expect(after.hasSuffix(before))
        #expect(after.split(separator: "\n").count == 6)
        #expect(try GitCLI.run(["log", "-1", "--format=%s"], in: path).hasPrefix("Roll back to \(first.prefix(12)): Create"))
        let history = try flowdir(["history", "p", "stylize1"], in: dir.path)
        #expect(history.stdout.contains("Edit params of stylize1"))
        #expect(!history.stdout.contains("Archive 'Stylize"))
        // Rolling back the rollback is just another commit.
        let undo = try flowdir(["rollback", "p", "HEAD~1"], in: dir.path)
        #expect(undo.status == 0)
        #expect(try String(contentsOfFile: path + "/nodes/stylize1/params.yaml", encoding: .utf8) == "steps: 99\n")
        let bad = try flowdir(["rollback", "p", "no-such-rev"], in: dir.path)
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("'no-such-rev' is not a commit of p"))
    }

    @Test func duplicateArchiveAndDelete() throws {
        let dir = try TemporaryDirectory()
        _ = try flowdir(["new", seed, "orig", "--title", "Original", "--set", "stylize1.steps=12"], in: dir.path)
        var r = try flowdir(["duplicate", "orig"], in: dir.path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "Duplicated 'Original' as 'Original (copy)' in original-copy\n")
        try GitCLI.expectHealthy(dir.path + "/original-copy")
        #expect(try String(contentsOfFile: dir.path + "/original-copy/nodes/stylize1/params.yaml", encoding: .utf8).contains("steps: 12\n"))
        #expect(try GitCLI.run(["rev-list", "--count", "HEAD"], in: dir.path + "/original-copy") == "1\n")
        r = try flowdir(["archive", "Original (copy)"], in: dir.path)
        #expect(r.stdout == "Archived 'Original (copy)' (original-copy).\n")
        #expect(try flowdir(["ls"], in: dir.path).stdout.split(separator: "\n").count == 2)
        #expect(try flowdir(["ls", "--archived"], in: dir.path).stdout.contains("Original (copy) (archived)"))
        r = try flowdir(["delete", "orig"], in: dir.path)
        #expect(r.status == 1)
        #expect(r.stderr.contains("add --yes"))
        r = try flowdir(["delete", "orig", "--yes"], in: dir.path)
        #expect(r.status == 0)
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/orig"))
    }

    @Test func deleteAsksOnATerminal() throws {
        let dir = try TemporaryDirectory()
        _ = try flowdir(["new", seed, "keep", "--title", "Keep me"], in: dir.path)
        // `script` gives flowdir a terminal; its stdin feeds the answer.
        func ask(_ answer: String) throws -> CommandResult {
            try dir.write("answer.txt", answer + "\n")
            return try CommandRunner.run("/bin/sh", ["-c", "script -qec '\(RepositoryPaths.flowdirExecutable) delete keep' /dev/null < answer.txt"],
                                         in: dir.path, environment: env.merging(["TERM": "dumb"]) { $1 })
        }
        var r = try ask("n")
        #expect(r.stdout.contains("Delete 'Keep me' at keep and its history (1 commits)? [y/N]"))
        #expect(r.stdout.contains("Kept keep."))
        #expect(FileManager.default.fileExists(atPath: dir.path + "/keep/instance.yaml"))
        r = try ask("  Yes\t")  // blanks around it, any case
        #expect(r.stdout.contains("Deleted 'Keep me' (keep)."))
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/keep"))
    }

    @Test func aSecondWriterWaitsThenSaysWhoHoldsTheLock() async throws {
        try await offPool { try self.lockContention() }
    }

    func lockContention() throws {
        let dir = try TemporaryDirectory()
        _ = try flowdir(["new", seed, "busy"], in: dir.path)
        let lock = try InstanceLock(instance: dir.path + "/busy", purpose: "a long job")
        let start = Date()
        let r = try flowdir(["archive", "busy"], in: dir.path)
        #expect(Date().timeIntervalSince(start) >= 1.5)  // it waited before giving up
        #expect(r.status == 75)
        #expect(r.stderr.contains("is being changed by another flowdir (pid \(getpid()) on \(Host.name): a long job, since"))
        let status = try flowdir(["status"], in: dir.path)
        #expect(status.stdout.contains("At work now:\n  busy: pid \(getpid())"))
        lock.release()
        #expect(try flowdir(["archive", "busy"], in: dir.path).status == 0)
    }
}
