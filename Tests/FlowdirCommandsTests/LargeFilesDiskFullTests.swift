import FlowdirCore
import FlowdirTestSupport
import Foundation
import Testing

/// A full disk while large files' content comes in (docs/storage.md):
/// nothing half-written is kept, the error says what happened and what to
/// do, and it works once there is room. Needs root (a small tmpfs is
/// mounted), as CI runs.
@Suite(.tags(.large), Tier.notQuick) struct LargeFilesDiskFullTests {
    @Test func aFullDiskDuringADownloadSaysSoAndWorksOnceSpaceReturns() throws {
        let i = try LargeOutputsTests.Instance(size: 3 << 20)
        let hub = i.dir.path + "/hub.git"
        _ = try CommandRunner.run("/usr/bin/git", ["init", "--quiet", "--bare", "--initial-branch=main", hub])
        _ = try i.git(["remote", "add", "origin", "file://" + hub])
        #expect(try i.flowdir(["run", i.inst]).status == 0)
        let sha = try i.sha256(i.outputFile)
        let small = i.dir.path + "/small"
        try FileManager.default.createDirectory(atPath: small, withIntermediateDirectories: true)
        let mounted = try CommandRunner.run("/bin/mount", ["-t", "tmpfs", "-o", "size=16m", "tmpfs", small])
        try #require(mounted.status == 0, "mount a tmpfs (needs root): \(mounted.stderr)")
        defer { _ = try? CommandRunner.run("/bin/umount", ["-l", small]) }
        #expect(try i.flowdir(["clone", "file://" + hub, "small/b"]).status == 0)
        let b = small + "/b"
        // Room for 1 MB, not for the 3 MB content.
        let free = Int(try CommandRunner.run("/usr/bin/df", ["--output=avail", "-B1", small]).stdout.split(separator: "\n")[1]) ?? 0
        _ = try CommandRunner.run("/bin/dd", ["if=/dev/zero", "of=" + small + "/filler", "bs=4096", "count=\(max(0, free - (1 << 20)) / 4096)"])
        let get = try i.flowdir(["storage", "get", b])
        #expect(get.status == 1, "\(get.stdout)\(get.stderr)")
        #expect(get.stderr.contains("No space left on device") && get.stderr.contains("hint: free space"), "\(get.stderr)")
        // Nothing half-written kept: no object, no temp file; the working file is still the pointer.
        let objects = (FileManager.default.enumerator(atPath: b + "/.git/lfs")?.allObjects as? [String] ?? []).filter { $0.hasSuffix(sha) || $0.hasPrefix("tmp/") }
        #expect(objects.isEmpty, "\(objects)")
        #expect(try String(contentsOfFile: b + "/nodes/big/out/out.bin", encoding: .utf8).hasPrefix("version https://git-lfs.github.com/spec/v1"))
        try FileManager.default.removeItem(atPath: small + "/filler")
        // (git-lfs's own filter needs room to run `git status`.)
        #expect(try GitCLI.run(["status", "--porcelain"], in: b).isEmpty)
        let again = try i.flowdir(["storage", "get", b])
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        #expect(try i.sha256(b + "/nodes/big/out/out.bin") == sha)
        #expect(try GitCLI.run(["status", "--porcelain"], in: b).isEmpty)
    }
}
