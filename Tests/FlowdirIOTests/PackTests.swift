import CLibGit2
import FlowdirCore
@testable import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// A commit's objects go to one pack flowdir writes itself; small packs are
/// merged as they pile up. git must read every pack as written.
@Suite(.tags(.medium)) struct PackTests {
    let message = CommitMessage(summary: "test", event: "test")

    @Test func sha1MatchesKnownDigests() {
        func hex(_ b: [UInt8]) -> String { b.map { String(format: "%02x", $0) }.joined() }
        #expect(hex(SHA1.hash([])) == "da39a3ee5e6b4b0d3255bfef95601890afd80709")
        #expect(hex(SHA1.hash(Array("abc".utf8))) == "a9993e364706816aba3e25717850c26c9cd0d89d")
        // git's blob id is the SHA-1 of "blob <size>\0<bytes>".
        let body = Array(repeating: UInt8(ascii: "x"), count: 100_003)
        #expect(hex(SHA1.hash(Array("blob 100003\0".utf8) + body)) == GitRepository.blobID(of: body).hex)
    }

    /// The empty blob's id is a constant, not hashed: it must be what
    /// hashing gives, and what git itself names it.
    @Test func emptyBlobIDIsWhatHashingGives() throws {
        var oid = git_oid()
        _ = LibGit2.ready
        #expect(git_odb_hash(&oid, nil, 0, GIT_OBJECT_BLOB) == 0)
        #expect(ObjectID(oid) == .emptyBlob)
        #expect(GitRepository.blobID(of: []) == ObjectID(oid))
        #expect(ObjectID.emptyBlob.hex == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")
        // Written (it is in no pack yet), and git reads it back as empty.
        let dir = try TemporaryDirectory()
        let repo = try GitRepository.create(at: dir.path)
        #expect(try repo.writeBlob([]) == .emptyBlob)
        #expect(try repo.readBlob(.emptyBlob).isEmpty)
    }

    /// Sizes in the entry header: 4 bits, then 7 a byte, low bits first.
    @Test func entryHeadersEncodeTypeAndSize() {
        #expect(PackBuilder.header(type: 3, size: 0) == [0x30])
        #expect(PackBuilder.header(type: 3, size: 15) == [0x3F])
        #expect(PackBuilder.header(type: 2, size: 16) == [0xA0, 0x01])
        #expect(PackBuilder.header(type: 1, size: 1 << 20) == [0x90, 0x80, 0x80, 0x04])
        for size in [0, 1, 15, 16, 127, 2047, 2048, 65_535, 1 << 24, (1 << 35) + 3] {
            let h = PackBuilder.header(type: 3, size: size)
            var decoded = Int(h[0] & 15), shift = 4
            for byte in h.dropFirst() {
                decoded |= Int(byte & 0x7F) << shift
                shift += 7
            }
            #expect(decoded == size && (h[0] >> 4) & 7 == 3 && h.dropLast().allSatisfy { $0 & 0x80 != 0 } && h.last! & 0x80 == 0)
        }
    }

    /// Offsets past 2 GiB go to the index's 64-bit table.
    @Test func largeOffsetsUseTheWideTable() {
        let a = GitRepository.blobID(of: [1]), b = GitRepository.blobID(of: [2])
        let index = PackBuilder.index([.init(id: a, offset: 12, crc: 7), .init(id: b, offset: 0x1_2345_6789, crc: 9)],
                                      packSum: [UInt8](repeating: 0xAB, count: 20))
        #expect(index.count == 8 + 1024 + 2 * 28 + 8 + 40)
        let offsets = 8 + 1024 + 2 * 24
        let low = a.hex < b.hex ? 0 : 1  // names are sorted: find each one's row
        func be32(_ at: Int) -> UInt32 { index[at..<(at + 4)].reduce(0) { $0 << 8 | UInt32($1) } }
        #expect(be32(offsets + 4 * low) == 12)
        #expect(be32(offsets + 4 * (1 - low)) == 0x8000_0000)
        #expect(be32(offsets + 8) == 1 && be32(offsets + 12) == 0x2345_6789)
        #expect(Array(index[(index.count - 40)..<(index.count - 20)]) == [UInt8](repeating: 0xAB, count: 20))
        #expect(Array(index.suffix(20)) == SHA1.hash(Array(index.dropLast(20))))
    }

    @Test func aCommitsObjectsAreOnePackGitVerifies() throws {
        let dir = try TemporaryDirectory()
        let store = try InstanceStore.create(at: dir.path + "/inst")
        var rng = SystemRandomNumberGenerator()
        let big = (0..<(ObjectWriter.packLimit + 1)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let files: [(String, [UInt8])] = [("a.txt", Array("a\n".utf8)), ("sub/b.txt", Array(repeating: 0x62, count: 9_000)),
                                          ("empty", []), ("big.bin", big)]
        try store.commit(files.map { .write($0.0, $0.1) }, message: message)
        let packs = try packFiles(store.path)
        #expect(packs.filter { $0.hasSuffix(".pack") }.count == 1)
        let verify = try GitCLI.run(["verify-pack", "-v", ".git/objects/pack/" + packs.first { $0.hasSuffix(".idx") }!], in: store.path)
        // Blobs a.txt, b.txt, empty; trees root and sub; never a delta.
        #expect(verify.contains("chain length") == false)
        #expect(verify.split(separator: "\n").filter { $0.contains(" blob ") || $0.contains(" tree ") }.count == 5)
        // Too large for a pack built in memory: loose, as git would write it.
        let bigID = GitRepository.blobID(of: big).hex
        #expect(FileManager.default.fileExists(atPath: store.path + "/.git/objects/\(bigID.prefix(2))/\(bigID.dropFirst(2))"))
        // libgit2 (a new handle, and the store's own) and git read every file back.
        let reopened = try GitRepository.open(store.path)
        let reopenedTree = try #require(try reopened.head()).tree
        let storeTree = try #require(store.head).tree
        for (path, bytes) in files {
            #expect(try reopened.blob(at: path, inTree: reopenedTree) == bytes, "\(path)")
            #expect(try store.repository.blob(at: path, inTree: storeTree) == bytes, "\(path)")
        }
        #expect(try GitCLI.run(["cat-file", "-p", "HEAD:a.txt"], in: store.path) == "a\n")
        try store.close()
        try GitCLI.expectHealthy(store.path)
    }

    /// A commit is never visible before the objects it names: its pack is
    /// written first, even while the batch goes on.
    @Test func aCommitIsMadeOnlyOnceItsObjectsAreInAPack() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/r"
        let repo = try GitRepository.create(at: path)
        let me = GitSignature(name: "t", email: "t@example.org", time: 0)
        try repo.batchingObjects {
            let blob = try repo.writeBlob(Array("x\n".utf8))
            let tree = try repo.updatedTree(base: nil, changes: [.blob(path: "d/x.txt", id: blob)])
            _ = try repo.createCommit(tree: tree, parents: [], message: "m\n", author: me, committer: me)
            #expect(try GitCLI.run(["cat-file", "-p", "HEAD:d/x.txt"], in: path) == "x\n")
            #expect(try packFiles(path).count == 2)
        }
    }

    /// Many commits leave a few packs, never one per commit; a pack git made
    /// with deltas is left as it is; every object stays readable.
    @Test func smallPacksAreMergedAndGitsOwnAreLeftAlone() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/inst"
        var store = try InstanceStore.create(at: path)
        // Similar files, so git's repack makes deltas.
        let base = (0..<2_000).map { "line \($0)\n" }.joined()
        try store.commit([.write("similar/1.txt", base), .write("similar/2.txt", base + "one more\n")], message: message)
        try store.close()
        try GitCLI.run(["repack", "-a", "-d", "-f", "--window=50"], in: path)
        let gitsPack = try packFiles(path).filter { $0.hasSuffix(".pack") }
        #expect(gitsPack.count == 1)
        #expect(try GitCLI.run(["verify-pack", "-v", ".git/objects/pack/" + gitsPack[0]], in: path).contains("chain length"))
        store = try InstanceStore.open(path, purpose: "test")
        var written: [String: String] = [:]
        for i in 0..<70 {
            let file = "nodes/n\(i % 9)/state.yaml"
            written[file] = "commit \(i)\n" + String(repeating: "x", count: i * 500)
            try store.commit([.write(file, written[file]!)], message: message)
            let ours = try store.repository.objects().packs.listPacks().filter { !gitsPack.contains($0.name + ".pack") }
            var perLevel: [Int: Int] = [:]
            for p in ours { perLevel[PackDirectory.level(ofSize: p.size), default: 0] += 1 }
            // Commits waited for merge at twice the count (see the next test).
            #expect(perLevel.values.allSatisfy { $0 < 2 * PackDirectory.mergeCount }, "after commit \(i): \(ours)")
        }
        #expect(try packFiles(path).contains(gitsPack[0]))
        #expect(try packFiles(path).filter { $0.hasSuffix(".pack") }.count < 3 * PackDirectory.mergeCount)
        // Read through the handle that merged (libgit2 still lists packs it
        // removed) and by git, including a file only the first commits had.
        let head = try #require(store.head).tree
        for (file, text) in written {
            #expect(try GitCLI.run(["cat-file", "-p", "HEAD:" + file], in: path) == text)
            #expect(try store.repository.readBlob(try #require(try store.repository.entry(at: file, inTree: head)).id) == Array(text.utf8))
        }
        // Packs it removed are let go: no descriptor or mapping of them is
        // kept (a watcher commits for weeks).
        let held = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)
        } + (try String(contentsOfFile: "/proc/self/maps", encoding: .utf8)).split(separator: "\n").map(String.init)
        let removed = held.filter { $0.contains(path + "/.git/objects/pack/") && $0.contains("(deleted)") }
        #expect(removed.isEmpty, "\(removed)")
        let first = try store.repository.resolve(revision: "HEAD~69")
        let old = try store.repository.blob(at: "nodes/n0/state.yaml", inTree: try store.repository.commit(first).tree)
        #expect(old == Array("commit 0\n".utf8))
        // Every commit's tree is still complete.
        #expect(try GitCLI.run(["rev-list", "--objects", "--all"], in: path).split(separator: "\n").count > 140)
        try store.close()
        try GitCLI.expectHealthy(path)
        for idx in try packFiles(path) where idx.hasSuffix(".idx") {
            try GitCLI.run(["verify-pack", ".git/objects/pack/" + idx], in: path)
        }
    }

    /// A commit someone waits for (the last of `flowdir run`) leaves small
    /// packs to commits written in the background, which merge them at
    /// `mergeCount`; waited-for commits merge only at twice that.
    @Test func commitsWaitedForLeaveMergingToBackgroundCommits() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/inst"
        let store = try InstanceStore.create(at: path)
        func level0() throws -> Int {
            try store.repository.objects().packs.listPacks().filter { PackDirectory.level(ofSize: $0.size) == 0 }.count
        }
        for i in 0..<(PackDirectory.mergeCount + 2) { try store.commit([.write("f\(i).txt", "\(i)\n")], message: message) }
        #expect(try level0() >= PackDirectory.mergeCount, "not merged by commits waited for")
        try store.commitInBackground([.write("g.txt", "g\n")], message: message)
        try store.waitForBackgroundCommits()
        #expect(try level0() < PackDirectory.mergeCount, "merged by the one written in the background")
        for i in 0..<(PackDirectory.mergeCount + 2) { try store.commit([.write("h\(i).txt", "\(i)\n")], message: message) }
        for i in 0..<PackDirectory.mergeCount { try store.commit([.write("k\(i).txt", "\(i)\n")], message: message) }
        #expect(try level0() < 2 * PackDirectory.mergeCount, "a waited-for commit still merges at twice the count")
        #expect(try GitCLI.run(["cat-file", "-p", "HEAD:g.txt"], in: path) == "g\n")
        try store.close()
        try GitCLI.expectHealthy(path)
        withExtendedLifetime(dir) {}
    }

    /// git repacking while the instance is open (a person's `git gc`):
    /// flowdir notices the folder changed and goes on from what is there.
    @Test func packsGitRewroteMeanwhileAreSeen() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/inst"
        let store = try InstanceStore.create(at: path)
        for i in 0..<5 { try store.commit([.write("f\(i).txt", "\(i)\n")], message: message) }
        // No deltas (--window=0): git's pack is one flowdir may merge.
        try GitCLI.run(["repack", "-a", "-d", "-q", "--window=0"], in: path)
        let gits = try packFiles(path).filter { $0.hasSuffix(".pack") }
        #expect(gits.count == 1)
        for i in 5..<(5 + 2 * PackDirectory.mergeCount) { try store.commit([.write("f\(i).txt", "\(i)\n")], message: message) }
        // Seen, so merged with flowdir's new ones (a stale list would miss it).
        #expect(try !packFiles(path).contains(gits[0]))
        let listed = try store.repository.objects().packs.listPacks()
        #expect(listed.count < PackDirectory.mergeCount + 1, "merged after git's repack: \(listed)")
        for i in 0..<(5 + 2 * PackDirectory.mergeCount) {
            #expect(try GitCLI.run(["cat-file", "-p", "HEAD:f\(i).txt"], in: path) == "\(i)\n")
        }
        try store.close()
        try GitCLI.expectHealthy(path)
    }

    /// A pack that cannot be written fails the commit and loses nothing:
    /// its objects are written again by the next commit that needs them.
    @Test func aFailedPackWriteIsRetriedByTheNextCommit() throws {
        let dir = try TemporaryDirectory()
        let path = dir.path + "/inst"
        let store = try InstanceStore.create(at: path)
        try store.commit([.write("keep.txt", "first\n")], message: message)
        let packs = path + "/.git/objects/pack"
        try FileManager.default.moveItem(atPath: packs, toPath: packs + ".away")
        #expect(FileManager.default.createFile(atPath: packs, contents: Data()))  // a file where the folder was
        #expect(throws: (any Error).self) { try store.commit([.write("new.txt", "second\n")], message: message) }
        try FileManager.default.removeItem(atPath: packs)
        try FileManager.default.moveItem(atPath: packs + ".away", toPath: packs)
        try store.commit([.write("new.txt", "second\n")], message: message)
        #expect(try GitCLI.run(["cat-file", "-p", "HEAD:new.txt"], in: path) == "second\n")
        try store.close()
        try GitCLI.expectHealthy(path)
    }

    private func packFiles(_ instance: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: instance + "/.git/objects/pack").filter { $0.hasPrefix("pack-") }.sorted()
    }
}
