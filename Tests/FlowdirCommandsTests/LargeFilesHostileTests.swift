import FlowdirCore
import FlowdirTestSupport
import Foundation
import Testing

/// Large files changed by hand (docs/storage.md): a pointer committed
/// with git naming other content or another size, a `.gitattributes`
/// edited, a store object made writable and changed. Each is named, and
/// never trusted: not put in the folder, not handed to a tool, not sent by
/// sync (`git lfs fsck` on the hub stays clean).
@Suite(.tags(.large), Tier.notQuick) struct LargeFilesHostileTests {
    typealias Instance = LargeOutputsTests.Instance

    /// An instance that ran and synced to a bare hub.
    func synced() throws -> (Instance, hub: String) {
        let i = try Instance()
        let hub = i.dir.path + "/hub.git"
        _ = try CommandRunner.run("/usr/bin/git", ["init", "--quiet", "--bare", "--initial-branch=main", hub])
        _ = try i.git(["remote", "add", "origin", "file://" + hub])
        let r = try i.flowdir(["run", i.inst])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(try i.flowdir(["sync", i.inst]).status == 0)
        return (i, hub)
    }

    func expectHubClean(_ hub: String) throws {
        guard try CommandRunner.run("/usr/bin/git", ["-C", hub, "rev-parse", "--verify", "--quiet", "main"]).status == 0 else { return }  // nothing pushed
        let fsck = try CommandRunner.run("/usr/bin/git", ["-C", hub, "lfs", "fsck"])
        #expect(fsck.status == 0 && !fsck.stdout.contains("openError"), "\(fsck.stdout)\(fsck.stderr)")
    }

    func state(_ i: Instance, _ node: String) throws -> String {
        try String(contentsOfFile: i.inst + "/nodes/\(node)/state.yaml", encoding: .utf8)
    }

    /// A person commits, with git, a pointer of their own at a large output's path.
    func commitPointer(_ i: Instance, oid: String, size: Int) throws {
        try "version https://git-lfs.github.com/spec/v1\noid sha256:\(oid)\nsize \(size)\n".write(toFile: i.outputFile, atomically: false, encoding: .utf8)
        _ = try i.git(["commit", "--quiet", "-am", "A pointer edited by hand"])
    }

    /// The consumer of the edited output is rerun: it must fail, never hash the pointer text.
    func expectNotUsed(_ i: Instance) throws {
        let before = try String(contentsOfFile: i.inst + "/nodes/use/out/out.txt", encoding: .utf8)
        _ = try i.flowdir(["rerun", i.inst, "use"])
        let s = try state(i, "use")
        #expect(s.contains("state: failed") && s.contains("changed by hand"), "\(s)")
        #expect(try String(contentsOfFile: i.inst + "/nodes/use/out/out.txt", encoding: .utf8) == before)
    }

    @Test func aPointerEditedToAnotherOidIsNeverUsedNorPushed() throws {
        let (i, hub) = try synced()
        let hubHead = try GitCLI.run(["rev-parse", "main"], in: hub)
        try commitPointer(i, oid: String(repeating: "ab", count: 32), size: 1 << 20)
        try expectNotUsed(i)
        let sync = try i.flowdir(["sync", i.inst])
        #expect(sync.status != 0 && sync.stderr.contains("neither here nor on origin"), "\(sync.stdout)\(sync.stderr)")
        #expect(try GitCLI.run(["rev-parse", "main"], in: hub) == hubHead)
        try expectHubClean(hub)
    }

    @Test func aPointerEditedToAnotherSizeIsNamedNeverUsedNorPushed() throws {
        let (i, hub) = try synced()
        let hubHead = try GitCLI.run(["rev-parse", "main"], in: hub)
        let sha = try i.sha256(i.outputFile)
        try commitPointer(i, oid: sha, size: (1 << 20) + 7)
        try expectNotUsed(i)
        let verify = try i.flowdir(["storage", "verify", i.inst])
        #expect(verify.status == 1 && verify.stdout.contains("pointer says 1048583 bytes"), "\(verify.stdout)\(verify.stderr)")
        let sync = try i.flowdir(["sync", i.inst])
        #expect(sync.status != 0, "\(sync.stdout)\(sync.stderr)")
        #expect(try GitCLI.run(["rev-parse", "main"], in: hub) == hubHead)
        try expectHubClean(hub)
    }

    @Test func aGitattributesLineRemovedOrAPatternAddedIsNamed() throws {
        let (i, hub) = try synced()
        // A line removed: the pointer stays committed, unmarked.
        try "".write(toFile: i.inst + "/.gitattributes", atomically: false, encoding: .utf8)
        _ = try i.git(["commit", "--quiet", "-m", "attributes emptied", ".gitattributes"])
        var verify = try i.flowdir(["storage", "verify", i.inst])
        #expect(verify.status == 1 && verify.stdout.contains("nodes/big/out/out.bin is committed as a Git LFS pointer but .gitattributes does not mark it"),
                "\(verify.stdout)\(verify.stderr)")
        #expect(verify.stdout.contains("/nodes/big/out/out.bin filter=lfs diff=lfs merge=lfs -text"))
        // The line put back, and a pattern of the person's added.
        try "/nodes/big/out/out.bin filter=lfs diff=lfs merge=lfs -text\n*.txt filter=lfs diff=lfs merge=lfs -text\n"
            .write(toFile: i.inst + "/.gitattributes", atomically: false, encoding: .utf8)
        _ = try i.git(["commit", "--quiet", "-m", "a pattern", ".gitattributes"])
        verify = try i.flowdir(["storage", "verify", i.inst])
        #expect(verify.status == 1 && verify.stdout.contains("`*.txt filter=lfs diff=lfs merge=lfs -text`, not a line of flowdir's"), "\(verify.stdout)")
        #expect(!verify.stdout.contains("does not mark it"), "\(verify.stdout)")
        // Not trusted: flowdir's next small output is committed as it is, never as a pointer.
        #expect(try i.flowdir(["rerun", i.inst, "use"]).status == 0)
        let committed = try i.git(["cat-file", "-p", "HEAD:nodes/use/out/out.txt"])
        #expect(committed.count == 65 && !committed.hasPrefix("version "), "\(committed)")
        // (The person's pattern itself goes out with their commit: `git lfs fsck` on the hub then
        // names out.txt as "should have been a pointer"; what flowdir pushed is the plain file.)
        #expect(try i.flowdir(["sync", i.inst]).status == 0)
        #expect(try GitCLI.run(["cat-file", "-p", "main:nodes/use/out/out.txt"], in: hub) == committed)
    }

    @Test func aStoreObjectChangedByHandIsNeverPutInPlaceNorSent() throws {
        let i = try Instance()
        #expect(try i.flowdir(["run", i.inst]).status == 0)
        let sha = try i.sha256(i.outputFile)
        let object = i.inst + "/.git/lfs/objects/\(sha.prefix(2))/\(sha.dropFirst(2).prefix(2))/\(sha)"
        _ = try CommandRunner.run("/bin/chmod", ["u+w", object])
        let handle = try #require(FileHandle(forWritingAtPath: object))
        try handle.seek(toOffset: 100)
        handle.write(Data("changed by hand".utf8))
        try handle.close()
        // The working file as a clone leaves it: its pointer; the consumer needs the content.
        let pointer = try i.git(["cat-file", "-p", "HEAD:nodes/big/out/out.bin"])
        try pointer.write(toFile: i.outputFile, atomically: false, encoding: .utf8)
        _ = try i.flowdir(["rerun", i.inst, "use"])
        let s = try state(i, "use")
        #expect(s.contains("state: failed") && s.contains("not the content its pointer names"), "\(s)")
        #expect(try String(contentsOfFile: i.outputFile, encoding: .utf8) == pointer)
        // Sync sends none of it: the push is refused, the hub gets neither content nor commit.
        let hub = i.dir.path + "/hub.git"
        _ = try CommandRunner.run("/usr/bin/git", ["init", "--quiet", "--bare", "--initial-branch=main", hub])
        _ = try i.git(["remote", "add", "origin", "file://" + hub])
        let sync = try i.flowdir(["sync", i.inst])
        #expect(sync.status != 0 && sync.stderr.contains("not sent"), "\(sync.stdout)\(sync.stderr)")
        #expect(!FileManager.default.fileExists(atPath: hub + "/lfs/objects/\(sha.prefix(2))/\(sha.dropFirst(2).prefix(2))/\(sha)"))
        #expect(try CommandRunner.run("/usr/bin/git", ["-C", hub, "rev-parse", "--verify", "main"]).status != 0)
        try expectHubClean(hub)
        let verify = try i.flowdir(["storage", "verify", i.inst])
        #expect(verify.status == 1 && verify.stdout.contains("does not match its content"), "\(verify.stdout)")
    }

    /// A copy on the hub changed by hand (same size) passes the size check
    /// `free` makes by default; `free --verify` reads it, and keeps ours.
    @Test(.tags(.sshd), Component.sshd.needed, arguments: [false, true]) func aHubCopyChangedByHandIsNoCopyToFreeVerify(overSSH: Bool) throws {
        let i = try Instance()
        let ssh = overSSH ? try SSHServer(dir: i.dir.path + "/ssh") : nil
        defer { ssh?.stop() }
        i.env.merge(ssh?.environment ?? [:]) { $1 }
        let hub = i.dir.path + "/hub.git"
        _ = try CommandRunner.run("/usr/bin/git", ["init", "--quiet", "--bare", "--initial-branch=main", hub])
        _ = try i.git(["remote", "add", "origin", overSSH ? "flowdir-test:" + hub : "file://" + hub])
        #expect(try i.flowdir(["run", i.inst]).status == 0)
        let first = try i.sha256(i.outputFile)
        #expect(try i.flowdir(["rerun", i.inst, "big", "--downstream"]).status == 0)
        #expect(try i.flowdir(["sync", i.inst]).status == 0)
        let objectPath = "lfs/objects/\(first.prefix(2))/\(first.dropFirst(2).prefix(2))/\(first)"
        _ = try CommandRunner.run("/bin/chmod", ["u+w", hub + "/" + objectPath])
        let handle = try #require(FileHandle(forWritingAtPath: hub + "/" + objectPath))
        try handle.seek(toOffset: 4096)
        handle.write(Data("changed by hand".utf8))
        try handle.close()
        // By size, the hub seems to hold it.
        let sized = try i.flowdir(["storage", "free", i.inst, "--dry-run"])
        #expect(sized.stdout.contains("big run 1"), "\(sized.stdout)\(sized.stderr)")
        let verified = try i.flowdir(["storage", "free", i.inst, "--verify", "--json"])
        #expect(verified.status == 0 && verified.stdout.contains("\"bytesFreed\" : 0"), "\(verified.stdout)\(verified.stderr)")
        #expect(FileManager.default.fileExists(atPath: i.inst + "/.git/" + objectPath))
        // Put right on the hub, it is a copy again, and is freed.
        _ = try CommandRunner.run("/bin/cp", [i.inst + "/.git/" + objectPath, hub + "/" + objectPath])
        let freed = try i.flowdir(["storage", "free", i.inst, "--verify"])
        #expect(freed.status == 0 && freed.stdout.contains("big run 1"), "\(freed.stdout)\(freed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: i.inst + "/.git/" + objectPath))
        // Nothing of the checks is left behind.
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: i.inst + "/.git/lfs/tmp")) ?? []).filter { $0.hasPrefix("verify-") }.isEmpty)
    }
}
