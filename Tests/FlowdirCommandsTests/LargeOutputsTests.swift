import FlowdirCore
import FlowdirTestSupport
import Foundation
import Testing

/// Large outputs beside git (docs/storage.md): committed as Git LFS
/// pointers, content in `.git/lfs/objects/`, the real file in the working
/// tree, with `git-lfs` (Debian's) as the oracle.
@Suite(.tags(.large), Tier.notQuick) struct LargeOutputsTests {
    final class Instance: @unchecked Sendable {
        let dir: TemporaryDirectory
        var env: [String: String]
        var inst: String { dir.path + "/big" }

        init(size: Int = 1 << 20) throws {
            dir = try TemporaryDirectory()
            // A fresh random file each run: reruns make new content.
            try dir.write("wf/tools/Big.yaml", """
                kind: Big
                outputs: { out: FileRef }
                run:
                  command: [sh, -c, 'head -c \(size) /dev/urandom > "$0"', "{outputs.out}"]
                """)
            try dir.write("wf/tools/Use.yaml", """
                kind: Use
                inputs: { in: FileRef }
                outputs: { out: TextRef }
                run:
                  command: [sh, -c, 'sha256sum < "$1" | cut -c1-64 > "$0"', "{outputs.out}", "{inputs.in}"]
                """)
            try dir.write("wf/t.yaml", """
                schema: app.workflow/v2
                name: Large
                nodes:
                  - { id: big, kind: Big }
                  - { id: use, kind: Use }
                edges: [big.out -> use.in]
                """)
            env = ["XDG_CONFIG_HOME": dir.path + "/config", "XDG_STATE_HOME": dir.path + "/state"]
            #expect(try flowdir(["new", "wf/t.yaml", "big"]).status == 0)
        }

        @discardableResult
        func flowdir(_ args: [String]) throws -> CommandResult {
            try CommandRunner.flowdir(args, in: dir.path, environment: env)
        }

        func git(_ args: [String]) throws -> String {
            let r = try CommandRunner.run("/usr/bin/git", args, in: inst, environment: env)
            guard r.status == 0 else { throw GitCLI.Failure(description: "git \(args.joined(separator: " ")): \(r.stderr)") }
            return r.stdout
        }

        var outputFile: String { inst + "/nodes/big/out/out.bin" }

        /// Throws for a missing file (an empty digest would match a folder's path).
        func sha256(_ file: String) throws -> String {
            let r = try CommandRunner.run("/usr/bin/sha256sum", [file])
            guard r.status == 0, r.stdout.count >= 64 else { throw GitCLI.Failure(description: "sha256sum \(file): \(r.stderr)") }
            return String(r.stdout.prefix(64))
        }
    }

    @Test func aLargeOutputIsAPointerInGitAndTheFileInTheFolder() throws {
        let i = try Instance()
        let r = try i.flowdir(["run", i.inst])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let out = try #require(FileManager.default.contentsOfDirectory(atPath: i.inst + "/nodes/big/out").first)
        let file = i.inst + "/nodes/big/out/" + out
        let sha = try i.sha256(file)
        // In git: a pointer; .gitattributes marks exactly that path.
        let committed = try i.git(["cat-file", "-p", "HEAD:nodes/big/out/" + out])
        #expect(committed == "version https://git-lfs.github.com/spec/v1\noid sha256:\(sha)\nsize 1048576\n")
        let attributes = try i.git(["cat-file", "-p", "HEAD:.gitattributes"])
        #expect(attributes.contains("/nodes/big/out/\(out) filter=lfs diff=lfs merge=lfs -text"), "\(attributes)")
        // The content once, read-only, where Git LFS keeps it.
        let object = i.inst + "/.git/lfs/objects/\(sha.prefix(2))/\(sha.dropFirst(2).prefix(2))/\(sha)"
        #expect(try i.sha256(object) == sha)
        // The consumer read the real bytes; its run records the content's sha256.
        #expect(try String(contentsOfFile: i.inst + "/nodes/use/out/out.txt", encoding: .utf8).hasPrefix(sha))
        let used = try String(contentsOfFile: i.inst + "/nodes/use/runs/1/run.yaml", encoding: .utf8)
        #expect(used.contains("sha256: \(sha)"), "\(used)")
        // The git CLI agrees: clean, and git-lfs sees the file.
        #expect(try i.git(["status", "--porcelain"]).isEmpty)
        #expect(try i.git(["lfs", "ls-files", "--long"]).contains(sha))
        let fsck = try CommandRunner.run("/usr/bin/git", ["-C", i.inst, "lfs", "fsck"])
        #expect(fsck.status == 0, "\(fsck.stdout)\(fsck.stderr)")
        #expect(try CommandRunner.run("/usr/bin/git", ["-C", i.inst, "fsck", "--strict"]).status == 0)
    }

    @Test func rerunsGrowGitByPointersNotContent() throws {
        let i = try Instance(size: 2 << 20)
        #expect(try i.flowdir(["run", i.inst]).status == 0)
        _ = try i.git(["gc", "--quiet"])
        func gitBytes() throws -> Int {
            Int(try CommandRunner.run("/usr/bin/du", ["-sb", "--exclude=lfs", i.inst + "/.git"]).stdout.split(separator: "\t")[0]) ?? 0
        }
        let before = try gitBytes()
        for _ in 0..<5 {
            let r = try i.flowdir(["rerun", i.inst, "big", "--downstream"])
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        }
        _ = try i.git(["gc", "--quiet"])
        // Five 2 MB versions: a few KB of git each (pointers, states, records), never their content.
        let growth = try gitBytes() - before
        #expect(growth < 5 * 64 * 1024, "grew \(growth) bytes")
        #expect(try i.git(["status", "--porcelain"]).isEmpty)
        let versions = try i.git(["log", "--format=%H", "--", "nodes/big/out"]).split(separator: "\n").count
        #expect(versions == 6)
    }

    @Test func rollbackPutsOldContentBackFromTheStore() throws {
        let i = try Instance()
        #expect(try i.flowdir(["run", i.inst]).status == 0)
        let first = try i.sha256(i.outputFile)
        let at = try i.git(["rev-parse", "HEAD"]).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try i.flowdir(["rerun", i.inst, "big", "--downstream"]).status == 0)
        #expect(try i.sha256(i.outputFile) != first)
        let back = try i.flowdir(["rollback", i.inst, at])
        #expect(back.status == 0, "\(back.stdout)\(back.stderr)")
        #expect(try i.sha256(i.outputFile) == first)
        #expect(try i.git(["status", "--porcelain"]).isEmpty)
    }

    /// A (laptop) runs and syncs to a bare hub, over a file URL or ssh (the
    /// loopback sshd); a plain `git clone` + `git lfs pull` gets the same
    /// bytes (file URL: git-lfs over ssh needs a server side of its own);
    /// B clones (pointers only), gets; A frees an old run, then rolls back
    /// to it: from the hub.
    @Test(.tags(.sshd), Component.sshd.needed, arguments: [false, true]) func twoMachinesThroughAHub(overSSH: Bool) throws {
        let i = try Instance()
        let ssh = overSSH ? try SSHServer(dir: i.dir.path + "/ssh") : nil
        defer { ssh?.stop() }
        i.env.merge(ssh?.environment ?? [:]) { $1 }
        let hub = i.dir.path + "/hub.git"
        let url = overSSH ? "flowdir-test:" + hub : "file://" + hub
        _ = try CommandRunner.run("/usr/bin/git", ["init", "--quiet", "--bare", "--initial-branch=main", hub])
        _ = try i.git(["remote", "add", "origin", url])
        #expect(try i.flowdir(["run", i.inst]).status == 0)
        let first = try i.sha256(i.outputFile)
        let at = try i.git(["rev-parse", "HEAD"]).trimmingCharacters(in: .whitespacesAndNewlines)
        let synced = try i.flowdir(["sync", i.inst])
        // (`run` already synced its lease and result, content first: the hub has it either way.)
        #expect(synced.status == 0, "\(synced.stdout)\(synced.stderr)")
        #expect(FileManager.default.fileExists(atPath: hub + "/lfs/objects/\(first.prefix(2))/\(first.dropFirst(2).prefix(2))/\(first)"))

        // git-lfs as the oracle: a plain clone and `git lfs pull` give the same bytes.
        if !overSSH {
            let plain = i.dir.path + "/plain"
            let clone = try CommandRunner.run("/usr/bin/git", ["clone", "--quiet", "file://" + hub, plain], environment: ["GIT_LFS_SKIP_SMUDGE": "1"])
            #expect(clone.status == 0, "\(clone.stderr)")
            let pull = try CommandRunner.run("/usr/bin/git", ["-C", plain, "lfs", "pull"])
            #expect(pull.status == 0, "\(pull.stdout)\(pull.stderr)")
            #expect(try i.sha256(plain + "/nodes/big/out/out.bin") == first)
        }

        // B: a clone holds pointers until it gets the content.
        let b = i.dir.path + "/b"
        #expect(try i.flowdir(["clone", url, "b"]).status == 0)
        #expect(try String(contentsOfFile: b + "/nodes/big/out/out.bin", encoding: .utf8).hasPrefix("version https://git-lfs.github.com/spec/v1"))
        let got = try i.flowdir(["storage", "get", b])
        #expect(got.status == 0, "\(got.stdout)\(got.stderr)")
        #expect(try i.sha256(b + "/nodes/big/out/out.bin") == first)
        #expect(try CommandRunner.run("/usr/bin/git", ["status", "--porcelain"], in: b, environment: i.env).stdout.isEmpty)

        // A reruns and syncs; the old run's content is then only needed on the hub.
        #expect(try i.flowdir(["rerun", i.inst, "big", "--downstream"]).status == 0)
        #expect(try i.flowdir(["sync", i.inst]).status == 0)
        let freed = try i.flowdir(["storage", "free", i.inst])
        #expect(freed.status == 0 && freed.stdout.contains("Freed"), "\(freed.stdout)\(freed.stderr)")
        let object = i.inst + "/.git/lfs/objects/\(first.prefix(2))/\(first.dropFirst(2).prefix(2))/\(first)"
        #expect(!FileManager.default.fileExists(atPath: object))
        // The current output is never freed.
        #expect(FileManager.default.fileExists(atPath: i.outputFile))
        let back = try i.flowdir(["rollback", i.inst, at])
        #expect(back.status == 0, "\(back.stdout)\(back.stderr)")
        #expect(try i.sha256(i.outputFile) == first)
        #expect(try i.git(["status", "--porcelain"]).isEmpty)
        let verify = try i.flowdir(["storage", "verify", i.inst])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")
        // No ssh connection of flowdir's outlives the command that opened it.
        if let ssh {
            let left = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).filter { pid in
                guard Int32(pid) != nil, let cmd = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline")) else { return false }
                let args = cmd.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
                return args.contains("-M") && args.contains("-N") && args.contains { $0.contains(ssh.dir) }
            }
            #expect(left.isEmpty, "ssh masters still running: \(left)")
        }
    }

    /// Content not yet on the remote is never freed, and a free with no remote drops nothing.
    @Test func freeNeverDropsTheLastCopy() throws {
        let i = try Instance()
        #expect(try i.flowdir(["run", i.inst]).status == 0)
        #expect(try i.flowdir(["rerun", i.inst, "big", "--downstream"]).status == 0)
        let before = try FileManager.default.subpathsOfDirectory(atPath: i.inst + "/.git/lfs/objects").filter { $0.count > 60 }.count
        let freed = try i.flowdir(["storage", "free", i.inst, "--json"])
        #expect(freed.status == 0, "\(freed.stderr)")
        #expect(freed.stdout.contains("\"bytesFreed\" : 0"), "\(freed.stdout)")
        let after = try FileManager.default.subpathsOfDirectory(atPath: i.inst + "/.git/lfs/objects").filter { $0.count > 60 }.count
        #expect(before == 2 && after == 2)
        // A changed store object is named, never trusted.
        let sha = try i.sha256(i.outputFile)
        let object = i.inst + "/.git/lfs/objects/\(sha.prefix(2))/\(sha.dropFirst(2).prefix(2))/\(sha)"
        _ = try CommandRunner.run("/bin/chmod", ["u+w", object])
        let handle = try #require(FileHandle(forWritingAtPath: object))
        try handle.seek(toOffset: 10)
        handle.write(Data("tampered".utf8))
        try handle.close()
        let verify = try i.flowdir(["storage", "verify", i.inst])
        #expect(verify.status == 1 && verify.stdout.contains("does not match"), "\(verify.stdout)")
    }

    /// A large answer goes to the store like an output: pointer in git, the
    /// real file in out/, its run's record with sha256, its consumer fed.
    @Test func aLargeAnswerIsKeptBesideGitToo() throws {
        let i = try Instance()
        try i.dir.write("wf/a.yaml", """
            schema: app.workflow/v2
            name: Answer
            nodes:
              - { id: pick, kind: UserAssetPicker, outputs: { image: ImageRef }, await: { type: select_asset } }
              - { id: use, kind: Use }
            edges: [pick.image -> use.in]
            """)
        #expect(try i.flowdir(["new", "wf/a.yaml", "ans"]).status == 0)
        let inst = i.dir.path + "/ans"
        #expect(try i.flowdir(["run", inst]).status == 2)
        let png = i.dir.path + "/noise.png"
        let made = try CommandRunner.run("/usr/bin/convert", ["-size", "700x700", "xc:", "+noise", "Random", png])
        #expect(made.status == 0, "\(made.stderr)")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: png)[.size] as? Int)
        #expect(size >= 512 * 1024)
        let answered = try i.flowdir(["answer", inst + "/pick", png])
        #expect(answered.status == 0, "\(answered.stdout)\(answered.stderr)")
        #expect(try i.flowdir(["run", inst]).status == 0)
        let sha = try i.sha256(png)
        #expect(try i.sha256(inst + "/nodes/pick/out/image.png") == sha)
        #expect(try GitCLI.run(["cat-file", "-p", "HEAD:nodes/pick/out/image.png"], in: inst).contains("oid sha256:\(sha)"))
        #expect(try String(contentsOfFile: inst + "/nodes/use/out/out.txt", encoding: .utf8).hasPrefix(sha))
        #expect(try GitCLI.run(["status", "--porcelain"], in: inst).isEmpty)
        #expect(try CommandRunner.run("/usr/bin/git", ["-C", inst, "lfs", "fsck"]).status == 0)
    }

    /// An https Git LFS server (giftless) named by `lfs.url`, reached with the
    /// user's git credentials: sync sends content there through the batch
    /// API; a clone gets it back, and so does a plain `git lfs pull`.
    @Test(.tags(.lfsServer), Component.lfsServer.needed) func syncSendsContentToAGitLFSServer() throws {
        try #require(FileManager.default.fileExists(atPath: LFSServerProcess.venv + "/bin/python"), "no giftless: `bash scripts/setup.sh` makes it")
        let i = try Instance()
        let server = try LFSServerProcess(dir: i.dir.path + "/lfs")
        defer { server.stop() }
        try "http://\(server.user):\(server.password)@127.0.0.1:\(server.port)\n".write(toFile: i.dir.path + "/credentials", atomically: true, encoding: .utf8)
        try "[credential]\n\thelper = store --file \(i.dir.path)/credentials\n".write(toFile: i.dir.path + "/gitconfig", atomically: true, encoding: .utf8)
        i.env.merge(["GIT_CONFIG_GLOBAL": i.dir.path + "/gitconfig", "GIT_CONFIG_NOSYSTEM": "1"]) { $1 }
        let hub = i.dir.path + "/hub.git"
        _ = try CommandRunner.run("/usr/bin/git", ["init", "--quiet", "--bare", "--initial-branch=main", hub])
        _ = try i.git(["remote", "add", "origin", "file://" + hub])
        _ = try i.git(["config", "lfs.url", server.batchURL])
        #expect(try i.flowdir(["run", i.inst]).status == 0)
        let sha = try i.sha256(i.outputFile)
        let synced = try i.flowdir(["sync", i.inst])
        #expect(synced.status == 0, "\(synced.stdout)\(synced.stderr)")
        // Not beside the hub: on the LFS server.
        #expect(!FileManager.default.fileExists(atPath: hub + "/lfs/objects/\(sha.prefix(2))/\(sha.dropFirst(2).prefix(2))/\(sha)"))
        let b = i.dir.path + "/b"
        #expect(try i.flowdir(["clone", "file://" + hub, "b"]).status == 0)
        _ = try CommandRunner.run("/usr/bin/git", ["-C", b, "config", "lfs.url", server.batchURL], environment: i.env)
        let got = try i.flowdir(["storage", "get", b])
        #expect(got.status == 0, "\(got.stdout)\(got.stderr)")
        #expect(try i.sha256(b + "/nodes/big/out/out.bin") == sha)
        // git-lfs itself, from the same server with the same credentials.
        let plain = i.dir.path + "/plain"
        var env = i.env
        env["GIT_LFS_SKIP_SMUDGE"] = "1"
        #expect(try CommandRunner.run("/usr/bin/git", ["clone", "--quiet", "file://" + hub, plain], environment: env).status == 0)
        _ = try CommandRunner.run("/usr/bin/git", ["-C", plain, "config", "lfs.url", server.batchURL], environment: i.env)
        _ = try CommandRunner.run("/usr/bin/git", ["-C", plain, "lfs", "install", "--local"], environment: i.env)  // as a git-lfs user has it
        let pull = try CommandRunner.run("/usr/bin/git", ["-C", plain, "lfs", "pull"], environment: i.env)
        #expect(pull.status == 0, "\(pull.stdout)\(pull.stderr)")
        #expect(try i.sha256(plain + "/nodes/big/out/out.bin") == sha)
    }
}
