import CLibGit2
import FlowdirCore
@testable import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// The store against the real git CLI: every commit it makes must leave a
/// repository git itself finds valid and clean.
@Suite(.tags(.medium)) struct InstanceStoreTests {
    let message = CommitMessage(summary: "test", event: "test")

    @Test func objectsFlowdirWritesItselfAreWhatGitReads() throws {
        let dir = try TemporaryDirectory()
        let store = try InstanceStore.create(at: dir.path + "/inst")
        var rng = SystemRandomNumberGenerator()
        let big = (0..<3_000_000).map { _ in UInt8.random(in: 0...255, using: &rng) }  // incompressible, several deflate rounds
        let files: [(String, [UInt8])] = [("empty", []), ("small.txt", Array("hello\n".utf8)), ("big.bin", big),
                                          ("deep/er/still.txt", Array(repeating: 0x61, count: 100_000)),
                                          // around the 4 KB line between stored and deflated objects (header included)
                                          ("edge/under.txt", Array(repeating: 0x62, count: 4_086)),
                                          ("edge/over.txt", Array(repeating: 0x63, count: 4_087))]
        // A temp file a killed flowdir with this pid left where this one will write its first object.
        #expect(FileManager.default.createFile(atPath: store.path + "/.git/objects/tmp_obj_flowdir_\(getpid())_1", contents: Data("junk".utf8),
                                               attributes: [.posixPermissions: 0o444]))
        try store.commit(files.map { .write($0.0, $0.1) }, message: message)
        try store.commit([.write("again.txt", Array("hello\n".utf8))], message: message)  // an object it has: not written twice
        try store.close()
        try GitCLI.expectHealthy(store.path)
        for (path, bytes) in files {
            let id = try GitCLI.run(["rev-parse", "HEAD:" + path], in: store.path).trimmingCharacters(in: .newlines)
            #expect(id == GitRepository.blobID(of: bytes).hex, "\(path)")
            let size = try GitCLI.run(["cat-file", "-s", id], in: store.path).trimmingCharacters(in: .newlines)
            #expect(size == "\(bytes.count)", "\(path)")
        }
        #expect(try GitCLI.run(["cat-file", "-p", "HEAD:small.txt"], in: store.path) == "hello\n")
        // Paths are looked up in the trees flowdir wrote, as git sees them.
        let tree = try #require(store.head?.tree)
        let file = try #require(try store.repository.entry(at: "deep/er/still.txt", inTree: tree))
        #expect(file.id == GitRepository.blobID(of: Array(repeating: 0x61, count: 100_000)) && !file.isTree && file.mode == 0o100644)
        let folder = try #require(try store.repository.entry(at: "deep/er", inTree: tree))
        #expect(folder.isTree && folder.mode == 0o40000 && folder.name == "er")
        #expect(folder.id.hex == (try GitCLI.run(["rev-parse", "HEAD:deep/er"], in: store.path).trimmingCharacters(in: .newlines)))
        #expect(try store.repository.entry(at: "nope", inTree: tree) == nil)
        #expect(try store.repository.entry(at: "small.txt/under", inTree: tree) == nil)
        #expect(try store.repository.entry(at: "edge/ove", inTree: tree) == nil)
        let stray = try FileManager.default.contentsOfDirectory(atPath: store.path + "/.git/objects").filter { $0.hasPrefix("tmp") }
        #expect(stray.isEmpty, "no temp object left: \(stray)")
    }

    /// Trees are written as zlib stored blocks, however large: one over
    /// 64 KB takes several blocks, and git reads it as written.
    @Test func largeTreesAreStoredInBlocksGitReads() throws {
        for n in [1, 0xFFFF - 1, 0xFFFF, 0xFFFF + 1, 3 * 0xFFFF + 7] {
            let body = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            let stream = ObjectWriter.stored(Array("blob \(n)\0".utf8), body)
            var out = [UInt8](repeating: 0, count: n + 64)
            var size = uLongf(out.count)
            #expect(uncompress(&out, &size, stream, uLong(stream.count)) == Z_OK, "\(n) bytes")
            let same = Array(out[..<Int(size)]) == Array("blob \(n)\0".utf8) + body
            #expect(same, "\(n) bytes: inflated to \(size)")
        }
        let dir = try TemporaryDirectory()
        let store = try InstanceStore.create(at: dir.path + "/inst")
        // 600 entries of ~130 bytes: a tree of ~78 KB (few files: the suite runs it beside timed tests)
        let names = (0..<600).map { "many/" + String(repeating: "n", count: 96) + "-\($0).txt" }
        try store.commit(names.map { .write($0, Array($0.utf8)) }, message: message)
        try store.close()
        try GitCLI.expectHealthy(store.path)
        let listed = try GitCLI.run(["ls-tree", "--name-only", "HEAD", "many/"], in: store.path).split(separator: "\n")
        #expect(listed.count == 600)
        let tree = try GitCLI.run(["rev-parse", "HEAD:many"], in: store.path).trimmingCharacters(in: .newlines)
        #expect(Int(try GitCLI.run(["cat-file", "-s", tree], in: store.path).trimmingCharacters(in: .newlines)) ?? 0 > 0xFFFF)
        #expect(try GitCLI.run(["cat-file", "-p", "HEAD:" + names[599]], in: store.path) == names[599])
    }

    @Test func commitsLeaveTheRepositoryValidAndClean() throws {
        let dir = try TemporaryDirectory()
        let store = try InstanceStore.create(at: dir.path + "/inst")
        try store.commit([.write("instance.yaml", "id: x\n"), .write("nodes/a/state.yaml", "state: ready\n")], message: message)
        try store.flushIndex()
        try GitCLI.expectHealthy(store.path)
        try store.commit([.write("nodes/a/state.yaml", "state: succeeded\n"), .write("nodes/b/params.yaml", "x: 1\n")],
                         message: CommitMessage(summary: "a done", event: "run",
                                                transitions: [Transition(node: "a", from: "ready", to: "succeeded", run: 1)]))
        try store.flushIndex()
        try GitCLI.expectHealthy(store.path)
        try store.commit([.delete("nodes/b/params.yaml")], message: message)
        try store.close()
        try GitCLI.expectHealthy(store.path)
        #expect(try GitCLI.run(["log", "--format=%s"], in: store.path) == "test\na done\ntest\n")
        #expect(try GitCLI.run(["log", "-1", "--skip=1", "--format=%B"], in: store.path) == """
            a done

            Flowdir-Event: run
            Flowdir-Transition: a ready→succeeded run=1


            """)
        #expect(try GitCLI.run(["ls-files"], in: store.path) == "instance.yaml\nnodes/a/state.yaml\n")
        #expect(try GitCLI.run(["log", "-1", "--format=%an <%ae>"], in: store.path) == "flowdir <flowdir@\(Host.name)>\n")
        // .flowdir/ exists (the lock) but is never committed or shown.
        #expect(FileManager.default.fileExists(atPath: store.path + "/.flowdir/lock"))
        #expect(try GitCLI.run(["status", "--porcelain", "--ignored=no"], in: store.path) == "")
    }

    /// The index keeps the stat of the file flowdir wrote, taken when it
    /// wrote it, not when the index is written (in batches, later): a
    /// person's edit in between still shows in `git status`.
    @Test func anEditBeforeTheIndexIsWrittenShowsInGitStatus() throws {
        let dir = try TemporaryDirectory()
        let store = try InstanceStore.create(at: dir.path + "/inst")
        // An output moved in by the engine comes with its stat as moved in.
        let output = store.path + "/nodes/a/out/out.txt"
        try FileManager.default.createDirectory(atPath: store.path + "/nodes/a/out", withIntermediateDirectories: true)
        try Files.writeAtomically(output, "made\n")
        try store.commit([.write("nodes/a/params.yaml", "x: 1\n"), .write("nodes/a/log.txt", ""),
                          .write("nodes/a/state.yaml", "state: ready\n"),
                          .placed("nodes/a/out/out.txt", Array("made\n".utf8), stamp: FileStamp.of(output))], message: message)
        // Edited in place (params.yaml to the same size), its time then set
        // back, as `cp -p` or `rsync -t` do: a time in an earlier second than
        // the index's is one git and libgit2 take at its word, without
        // hashing the file ("racy" entries, of the index's second, they hash).
        for (file, text) in [("params.yaml", "x: 2\n"), ("log.txt", "late\n"), ("out/out.txt", "edit\n")] {
            let full = store.path + "/nodes/a/" + file
            let handle = try #require(FileHandle(forWritingAtPath: full))
            try handle.write(contentsOf: Data(text.utf8))
            try handle.close()
            try FileManager.default.setAttributes([.modificationDate: Date() - 5], ofItemAtPath: full)
        }
        try store.flushIndex()
        #expect(try GitCLI.run(["status", "--porcelain"], in: store.path) == " M nodes/a/log.txt\n M nodes/a/out/out.txt\n M nodes/a/params.yaml\n")
    }

    @Test func sameBytesAreNoChange() throws {
        let dir = try TemporaryDirectory()
        let store = try InstanceStore.create(at: dir.path + "/inst")
        let first = try store.commit([.write("a.txt", "same\n")], message: message)
        #expect(first != nil)
        #expect(try store.commit([.write("a.txt", "same\n")], message: message) == nil)
        #expect(try GitCLI.run(["rev-list", "--count", "HEAD"], in: store.path) == "1\n")
    }

    /// A file committed "as it is in the folder" (a run's log) that is not
    /// there (a person removed it, or it was never made) is committed as
    /// absent; the rest of the commit is made.
    @Test func anExistingFileThatIsGoneIsCommittedAsAbsent() throws {
        let dir = try TemporaryDirectory()
        let store = try InstanceStore.create(at: dir.path + "/inst")
        try FileManager.default.createDirectory(atPath: store.path + "/runs/1", withIntermediateDirectories: true)
        try "working\n".write(toFile: store.path + "/runs/1/log.txt", atomically: true, encoding: .utf8)
        try store.commit([.existing("runs/1/log.txt"), .existing("runs/2/log.txt"), .write("a.txt", "a\n")], message: message)
        #expect(try GitCLI.run(["ls-tree", "-r", "--name-only", "HEAD"], in: store.path) == "a.txt\nruns/1/log.txt\n")
        try FileManager.default.removeItem(atPath: store.path + "/runs/1/log.txt")
        try store.commit([.existing("runs/1/log.txt"), .write("a.txt", "b\n")], message: message)
        try store.close()
        #expect(try GitCLI.run(["ls-tree", "-r", "--name-only", "HEAD"], in: store.path) == "a.txt\n")
        #expect(try GitCLI.run(["ls-files"], in: store.path) == "a.txt\n")
        #expect(try GitCLI.run(["status", "--porcelain"], in: store.path) == "")
        try GitCLI.expectHealthy(store.path)
    }
}

/// Trees are spliced by hand (TreeWriter); git must agree with every one.
@Suite(.tags(.medium)) struct TreeWriterTests {
    /// Once with trees kept in memory, once with a cache so small every tree is read back from disk.
    @Test(arguments: [32 << 20, 100])
    func randomEditsMatchAModelAndPassFsck(cacheBytes: Int) throws {
        let dir = try TemporaryDirectory()
        let store = try InstanceStore.create(at: dir.path + "/inst")
        store.repository.treeWriter.cacheByteLimit = cacheBytes
        // Names chosen to stress git's order: '-' < '.' < '/' < '0' < 'a'.
        let names = ["a", "a-b", "a.b", "a0", "b", "A", "a b", "ä", "x.yaml"]
        var model: [String: String] = [:]
        var rng = SplitMix(seed: 42)
        for round in 0..<150 {
            var changes: [InstanceStore.Change] = []
            var touched = Set<String>()
            for _ in 0..<Int(rng.next() % 4 + 1) {
                let depth = Int(rng.next() % 3) + 1
                let path = (0..<depth).map { _ in names[Int(rng.next() % UInt64(names.count))] }.joined(separator: "/")
                // A path can't be both a file and a folder: skip conflicting picks.
                let clashes = model.keys.contains { $0.hasPrefix(path + "/") || path.hasPrefix($0 + "/") }
                    || touched.contains { $0.hasPrefix(path + "/") || path.hasPrefix($0 + "/") }
                guard !clashes, touched.insert(path).inserted else { continue }
                if model[path] != nil, rng.next() % 3 == 0 {
                    changes.append(.delete(path))
                    model[path] = nil
                } else {
                    let text = "round \(round) \(path)\n"
                    changes.append(.write(path, text))
                    model[path] = text
                }
            }
            try store.commit(changes, message: CommitMessage(summary: "round \(round)", event: "test"))
            // Lookups in the trees just written (and their cached entry offsets) agree with the model.
            for path in touched { #expect(store.isTracked(path) == (model[path] != nil), "\(path) after round \(round)") }
        }
        try store.close()
        try GitCLI.expectHealthy(store.path)
        let listed = try GitCLI.run(["ls-tree", "-r", "--name-only", "-z", "HEAD"], in: store.path)
            .split(separator: "\0").map(String.init).sorted()
        #expect(listed == model.keys.sorted())
        for (path, text) in model {
            #expect(try GitCLI.run(["show", "HEAD:" + path], in: store.path) == text)
        }
    }

    /// A batch is spliced from sorted ranges (`build`) unless it holds a
    /// path twice or a file and a folder of one name; either way the tree
    /// is the one the general way (`rewrite`) makes, edit order included.
    @Test func sortedBatchesMakeTheTreesTheGeneralWayMakes() throws {
        let dir = try TemporaryDirectory()
        let sorted = try InstanceStore.create(at: dir.path + "/sorted")
        let general = try InstanceStore.create(at: dir.path + "/general")
        general.repository.treeWriter.alwaysGeneral = true
        // Names of one length that differ past their first byte, and git's order traps ('-' < '.' < '/' < '0').
        let names = ["a", "a-b", "a.b", "a b", "a_b", "a0", "b", "A", "ä", "x.yaml", "runs", "1"]
        // First a folder becoming a file and back with a name sorting between
        // them ("a" < "a-b" < "a/x" in git's bytes, not with `/` first).
        let scripted: [[InstanceStore.Change]] = [
            [.write("a/x", "x\n"), .write("a-b", "1\n")],
            [.delete("a/x"), .write("a", "file\n"), .write("a-b", "2\n")],
            [.delete("a"), .write("a/y", "y\n"), .write("a.b", "3\n")],
        ]
        for (n, changes) in scripted.enumerated() {
            let message = CommitMessage(summary: "scripted \(n)", event: "test")
            try sorted.commit(changes, message: message)
            try general.commit(changes, message: message)
            #expect(sorted.head?.tree == general.head?.tree, "scripted \(n)")
        }
        var rng = SplitMix(seed: 7)
        var paths: [String] = []
        for round in 0..<150 {
            var changes: [InstanceStore.Change] = []
            for _ in 0..<Int(rng.next() % 30 + 1) {
                // Mostly paths seen before (as a run's steps touch theirs again), some new.
                let path = !paths.isEmpty && rng.next() % 3 != 0 ? paths[Int(rng.next() % UInt64(paths.count))]
                    : (0..<Int(rng.next() % 4 + 1)).map { _ in names[Int(rng.next() % UInt64(names.count))] }.joined(separator: "/")
                paths.append(path)
                changes.append(rng.next() % 4 == 0 ? .delete(path) : .write(path, "round \(round) \(path)\n"))
            }
            let message = CommitMessage(summary: "round \(round)", event: "test")
            // A file where a folder is (or the reverse) cannot be written: both refuse it alike.
            var refused = (sorted: false, general: false)
            do { try sorted.commit(changes, message: message) } catch { refused.sorted = true }
            do { try general.commit(changes, message: message) } catch { refused.general = true }
            #expect(refused.sorted == refused.general, "round \(round)")
            #expect(sorted.head?.tree == general.head?.tree, "round \(round): \(changes.map(\.path))")
        }
        try sorted.close()
        try general.close()
        // (A refused batch leaves its blobs dangling, in both: fsck is the test above's.)
        #expect(try GitCLI.run(["ls-tree", "-r", "HEAD"], in: sorted.path) == GitCLI.run(["ls-tree", "-r", "HEAD"], in: general.path))
    }

    @Test func aFileCanBecomeAFolderAndBack() throws {
        let dir = try TemporaryDirectory()
        let store = try InstanceStore.create(at: dir.path + "/inst")
        let m = CommitMessage(summary: "x", event: "test")
        try store.commit([.write("a", "file\n"), .write("a.txt", "t\n"), .write("a-b/c", "c\n")], message: m)
        try store.commit([.delete("a"), .write("a/inner", "now a folder\n")], message: m)
        try store.flushIndex()
        try GitCLI.expectHealthy(store.path)
        try store.commit([.delete("a/inner"), .write("a", "a file again\n")], message: m)
        try store.commit([.delete("a"), .delete("a.txt"), .delete("a-b/c")], message: m)
        try store.close()
        try GitCLI.expectHealthy(store.path)
        #expect(try GitCLI.run(["ls-tree", "-r", "HEAD"], in: store.path) == "")
    }
}
