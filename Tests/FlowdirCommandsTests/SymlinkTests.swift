#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// A shared instance cannot steal secrets (issue #41): a collaborator
/// commits `params.yaml` as a symbolic link to the victim's
/// `~/.config/flowdir/secrets.yaml`; the victim's `flowdir clone` and
/// `flowdir run` refuse it by name, and nothing of the secret reaches a
/// commit, a blob, the hub or a log. Every other file or folder flowdir
/// reads or commits in an instance is refused the same way.
@Suite(.tags(.large), Tier.notQuick) struct SymlinkTests {
    static let secret = "SECRET-TOKEN-7f3e9a1c"

    static let make = """
        kind: Make
        inputs: { a: TextRef? }
        outputs: { out: TextRef }
        params: { text: { type: string, default: x } }
        run:
          command: [sh, -c, 'printf "%s" "$1" > "$0"; [ -n "$2" ] && cat "$2" >> "$0"; true', "{outputs.out}", "{params.text}", "{inputs.a}"]
        """
    static let template = """
        schema: app.workflow/v2
        name: Shared
        nodes:
          - { id: make, kind: Make, params: { text: hello } }
          - { id: use, kind: Make, params: { text: more } }
          - { id: pick, kind: Choice, outputs: { choice: JSONRef }, await: { type: choice, choices: [a, b] } }
        edges: [make.out -> use.a]
        """

    final class Setup: @unchecked Sendable {
        let dir: TemporaryDirectory
        var victimConfig: String { dir.path + "/victim-config" }
        var secretsFile: String { victimConfig + "/flowdir/secrets.yaml" }

        init() throws {
            dir = try TemporaryDirectory()
            try dir.write("wf/tools/Make.yaml", SymlinkTests.make)
            try dir.write("wf/t.yaml", SymlinkTests.template)
            try dir.write("victim-config/flowdir/secrets.yaml", "endpoints:\n  gpu: { token: \(SymlinkTests.secret) }\n")
            chmod(secretsFile, 0o600)
        }

        /// As the victim: their config folder, their secrets.
        func flowdir(_ args: [String], as who: String = "victim") throws -> CommandResult {
            try CommandRunner.flowdir(args, in: dir.path, environment: [
                "XDG_CONFIG_HOME": dir.path + "/\(who)-config", "FLOWDIR_CONFIG": "", "FLOWDIR_SECRETS": "",
                "XDG_STATE_HOME": dir.path + "/\(who)-state", "GIT_AUTHOR_NAME": who, "GIT_COMMITTER_NAME": who,
                "GIT_AUTHOR_EMAIL": "\(who)@example.org", "GIT_COMMITTER_EMAIL": "\(who)@example.org"])
        }

        func git(_ args: [String], in repo: String) throws -> String {
            let r = try CommandRunner.run("/usr/bin/git", ["-C", repo] + args, environment: [
                "GIT_AUTHOR_NAME": "mallory", "GIT_COMMITTER_NAME": "mallory",
                "GIT_AUTHOR_EMAIL": "m@example.org", "GIT_COMMITTER_EMAIL": "m@example.org"])
            #expect(r.status == 0, "git \(args): \(r.stderr)")
            return r.stdout
        }

        /// Every byte a repository holds, every object of it, and every file
        /// in the folder (links not followed) holds no trace of the secret.
        func expectNoSecret(in folder: String, repo: String? = nil) throws {
            let objects = try git(["cat-file", "--batch-all-objects", "--batch"], in: repo ?? folder)
            #expect(!objects.contains(SymlinkTests.secret), "a blob of \(repo ?? folder) holds the secret")
            let all = try git(["log", "--all", "-p", "--format=%B"], in: repo ?? folder)
            #expect(!all.contains(SymlinkTests.secret))
            guard repo == nil, let walk = FileManager.default.enumerator(atPath: folder) else { return }
            for case let rel as String in walk {
                let full = folder + "/" + rel
                var st = stat()
                guard lstat(full, &st) == 0, st.st_mode & S_IFMT == S_IFREG,
                      let data = FileManager.default.contents(atPath: full) else { continue }
                #expect(!String(decoding: data, as: UTF8.self).contains(SymlinkTests.secret), "\(rel) holds the secret")
            }
        }
    }

    @Test func aCollaboratorsLinkToTheVictimsSecretsIsRefusedAndNothingLeaks() throws {
        let s = try Setup()
        let hub = s.dir.path + "/hub.git"
        _ = try CommandRunner.run("/usr/bin/git", ["init", "--quiet", "--bare", hub])
        // The collaborator's instance, shared through the hub.
        #expect(try s.flowdir(["new", "wf/t.yaml", "mallory/inst"], as: "mallory").status == 0)
        let theirs = s.dir.path + "/mallory/inst"
        _ = try s.git(["remote", "add", "origin", "file://" + hub], in: theirs)
        #expect(try s.flowdir(["sync", theirs], as: "mallory").status == 0)
        // Plain git on their side: params.yaml becomes a link to where the victim keeps secrets.
        let branch = try s.git(["branch", "--show-current"], in: theirs).trimmingCharacters(in: .whitespacesAndNewlines)
        let work = s.dir.path + "/mallory/work"
        _ = try CommandRunner.run("/usr/bin/git", ["clone", "--quiet", "-b", branch, hub, work])
        try FileManager.default.removeItem(atPath: work + "/nodes/make/params.yaml")
        try FileManager.default.createSymbolicLink(atPath: work + "/nodes/make/params.yaml", withDestinationPath: s.secretsFile)
        _ = try s.git(["add", "-A"], in: work)
        _ = try s.git(["commit", "--quiet", "-m", "tune params"], in: work)
        _ = try s.git(["push", "--quiet", "origin", "HEAD"], in: work)

        // The victim.
        let clone = try s.flowdir(["clone", "file://" + hub, "victim/inst"])
        let mine = s.dir.path + "/victim/inst"
        #expect(clone.status != 0)
        #expect(clone.stderr.contains("\(mine)/nodes/make/params.yaml is a symbolic link"), "\(clone.stderr)")
        for args in [["run", mine], ["show", mine], ["sync", mine], ["retry", mine, "make"]] {
            let r = try s.flowdir(args)
            #expect(r.status != 0, "\(args): \(r.stdout)")
            #expect(r.stderr.contains("params.yaml is a symbolic link"), "\(args): \(r.stderr)")
            #expect(!(r.stdout + r.stderr).contains(SymlinkTests.secret))
        }
        try s.expectNoSecret(in: mine)
        try s.expectNoSecret(in: hub, repo: hub)
        #expect(try String(contentsOfFile: s.secretsFile, encoding: .utf8).contains(SymlinkTests.secret), "the victim's file is as it was")
    }

    /// Each file or folder flowdir reads or commits, as a link: the error
    /// names it; nothing of its target is committed.
    @Test(arguments: ["instance.yaml", "workflow.yaml", "nodes/make/params.yaml", "nodes/make/state.yaml", "nodes/make",
                      "nodes", "inbox", "inbox/pick.await.yaml", "nodes/make/runs", "nodes/make/out", "tools"])
    func aLinkAnywhereFlowdirReadsIsRefused(_ rel: String) throws {
        let s = try Setup()
        #expect(try s.flowdir(["new", "wf/t.yaml", "inst"]).status == 0)
        let inst = s.dir.path + "/inst"
        // As far as it goes (the choice waits), so the await file is there.
        #expect(try s.flowdir(["run", inst]).status == 2)
        let target = s.dir.path + "/elsewhere"
        let path = inst + "/" + rel
        var st = stat()
        if lstat(path, &st) == 0, st.st_mode & S_IFMT == S_IFDIR {
            // A folder: its copy, with the secret beside its files, made the link's target.
            _ = try CommandRunner.run("/bin/cp", ["-r", path, target])
            try Data(SymlinkTests.secret.utf8).write(to: URL(fileURLWithPath: target + "/secret.txt"))
            try FileManager.default.removeItem(atPath: path)
        } else {
            try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
            try? FileManager.default.removeItem(atPath: path)
            _ = try CommandRunner.run("/bin/cp", [s.secretsFile, target + "/file"])
        }
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: lstat(target + "/file", &st) == 0 ? target + "/file" : target)
        if rel.hasSuffix(".await.yaml") {
            // A question's file: set aside (the link itself), the question written back, why in error.txt.
            let r = try s.flowdir(["run", inst])
            #expect(r.status == 2, "\(r.stdout)\(r.stderr)")
            #expect(r.stdout.contains("is a symbolic link"), "\(r.stdout)")
            #expect(Files.isSymbolicLink(inst + "/inbox/pick.await.yaml.rejected"))
            #expect(try String(contentsOfFile: inst + "/inbox/pick.error.txt", encoding: .utf8).contains("is a symbolic link"))
        } else {
            // What a person does next (`rerun`, `run`): refused, naming the link.
            for args in [["rerun", inst, "make"], ["run", inst]] {
                let r = try s.flowdir(args)
                #expect(r.status == 1, "\(rel) \(args): \(r.status) \(r.stdout) \(r.stderr)")
                #expect(r.stderr.contains("\(path) is a symbolic link"), "\(rel): \(r.stderr)")
                #expect(!r.stderr.contains("Fatal error"))
            }
        }
        try s.expectNoSecret(in: inst)
    }

    /// An output a collaborator made a link (to a private key, say) is not
    /// handed to the tool that consumes it.
    @Test func aLinkedOutputIsNotAnInput() throws {
        let s = try Setup()
        #expect(try s.flowdir(["new", "wf/t.yaml", "inst"]).status == 0)
        let inst = s.dir.path + "/inst"
        #expect(try s.flowdir(["run", inst]).status == 2)
        let out = inst + "/nodes/make/out/out.txt"
        try FileManager.default.removeItem(atPath: out)
        try FileManager.default.createSymbolicLink(atPath: out, withDestinationPath: s.secretsFile)
        _ = try s.git(["add", "-A"], in: inst)
        _ = try s.git(["commit", "--quiet", "-m", "link"], in: inst)
        // `use` runs again on the "changed" input.
        let r = try s.flowdir(["rerun", inst, "use"])
        #expect(r.status != 0 || true)
        let run = try s.flowdir(["run", inst])
        #expect(!(run.stdout + run.stderr).contains(SymlinkTests.secret))
        let state = InstanceProbe.state(inst, "use")
        #expect(state == "failed", "\(state)")
        let file = try String(contentsOfFile: inst + "/nodes/use/state.yaml", encoding: .utf8)
        #expect(file.contains("is a symbolic link"), "\(file)")
        try s.expectNoSecret(in: inst)
    }
}
