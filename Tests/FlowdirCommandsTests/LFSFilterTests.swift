import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// `flowdir lfs clean|smudge` as git's `lfs` filter where git-lfs is not
/// installed: a person's git commands see pointers in git and real files
/// in the working tree, as with git-lfs; and git-lfs reads what it stored.
@Suite(.tags(.large), Tier.notQuick) struct LFSFilterTests {
    func git(_ args: [String], _ dir: String) throws -> String {
        try GitCLI.run(["-c", "user.name=P", "-c", "user.email=p@example.org"] + args, in: dir)
    }

    @Test func gitsOwnCommandsGoThroughFlowdirAsTheFilter() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            let repo = dir.path + "/r"
            try GitCLI.run(["init", "-q", repo], in: dir.path)
            for (k, v) in LFSFilter.configuration(gitLFS: false, executable: RepositoryPaths.flowdirExecutable) {
                try GitCLI.run(["config", k, v], in: repo)
            }
            try dir.write("r/.gitattributes", "*.bin filter=lfs diff=lfs merge=lfs -text\n")
            var rng = SystemRandomNumberGenerator()
            let bytes = Data((0..<700_000).map { _ in UInt8.random(in: 0...255, using: &rng) })
            try bytes.write(to: URL(fileURLWithPath: repo + "/a.bin"))
            _ = try git(["add", "."], repo)
            _ = try git(["commit", "-qm", "one"], repo)
            // git holds the pointer, the store the content, the working tree the file.
            let pointer = try git(["cat-file", "-p", "HEAD:a.bin"], repo)
            let parsed = try LFSPointer.parse(Array(pointer.utf8)).get()
            #expect(parsed.size == 700_000)
            #expect(FileManager.default.contents(atPath: repo + "/.git/" + parsed.objectPath) == bytes)
            #expect(try git(["status", "--porcelain"], repo) == "")
            // checkout gives the content back; stash keeps and restores an edit.
            try FileManager.default.removeItem(atPath: repo + "/a.bin")
            _ = try git(["checkout", "--", "a.bin"], repo)
            #expect(FileManager.default.contents(atPath: repo + "/a.bin") == bytes)
            var edited = bytes
            edited.append(contentsOf: [1, 2, 3])
            try edited.write(to: URL(fileURLWithPath: repo + "/a.bin"))
            #expect(try git(["status", "--porcelain"], repo) == " M a.bin\n")
            let diff = try git(["diff"], repo)
            #expect(diff.contains("-size 700000\n") && diff.contains("+size 700003\n"), "\(diff)")
            _ = try git(["stash", "-q"], repo)
            #expect(FileManager.default.contents(atPath: repo + "/a.bin") == bytes)
            _ = try git(["stash", "pop", "-q"], repo)
            #expect(FileManager.default.contents(atPath: repo + "/a.bin") == edited)
            // git-lfs itself agrees with what flowdir stored.
            let fsck = try CommandRunner.run("/usr/bin/git", ["lfs", "fsck"], in: repo)
            #expect(fsck.status == 0, "\(fsck.stdout)\(fsck.stderr)")
            // Content not here: the pointer stays in the working tree, and git is not blocked.
            let clone = dir.path + "/c"
            _ = try GitCLI.run(["clone", "-q", "-c", "filter.lfs.smudge=\(RepositoryPaths.flowdirExecutable) lfs smudge -- %f",
                                "-c", "filter.lfs.required=true", repo, clone], in: dir.path)
            #expect(try String(contentsOfFile: clone + "/a.bin", encoding: .utf8) == pointer)
        }
    }
}
