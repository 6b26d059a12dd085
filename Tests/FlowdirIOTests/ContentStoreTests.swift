#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
@testable import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// The content store against git-lfs and git themselves: the same oids,
/// pointers and blob ids; objects in git-lfs's layout, read-only, whole.
@Suite(.tags(.medium)) struct ContentStoreTests {
    func randomBytes(_ n: Int) -> [UInt8] {
        var rng = SystemRandomNumberGenerator()
        return (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    @Test func storedAsGitLFSStoresIt() throws {
        let dir = try TemporaryDirectory()
        try GitCLI.run(["init", "-q", dir.path + "/repo"], in: dir.path)
        let file = dir.path + "/repo/big.bin"
        // Several copy pieces, and a last one that is not whole.
        let bytes = randomBytes(ContentStore.chunk * 2 + 12_345)
        #expect(FileManager.default.createFile(atPath: file, contents: Data(bytes)))
        let store = ContentStore(gitDirectory: dir.path + "/repo/.git")
        let stored = try store.store(file: file)
        // git-lfs's pointer, byte for byte; git's blob id of the content.
        let pointer = try CommandRunner.run("/usr/bin/git", ["lfs", "pointer", "--file=big.bin"], in: dir.path + "/repo", environment: [:])
        #expect(pointer.stdout == stored.pointer.text)
        let blob = try GitCLI.run(["hash-object", "big.bin"], in: dir.path + "/repo").trimmingCharacters(in: .newlines)
        #expect(stored.blob.hex == blob)
        // In git-lfs's place, read-only, with the same bytes; nothing left in tmp.
        let object = dir.path + "/repo/.git/" + stored.pointer.objectPath
        #expect(FileManager.default.contents(atPath: object) == Data(bytes))
        var st = stat()
        lstat(object, &st)
        #expect(st.st_mode & 0o777 == 0o444)
        #expect(ContentStore.list(dir.path + "/repo/.git/lfs/tmp").isEmpty)
        #expect(store.has(stored.pointer))
        #expect(try store.verify(stored.pointer))
        // git lfs fsck agrees, once a commit points at it.
        try GitCLI.run(["config", "filter.lfs.clean", "git-lfs clean -- %f"], in: dir.path + "/repo")
        try Data(stored.pointer.bytes).write(to: URL(fileURLWithPath: dir.path + "/repo/big.bin"))
        try "big.bin filter=lfs diff=lfs merge=lfs -text\n".write(toFile: dir.path + "/repo/.gitattributes", atomically: true, encoding: .utf8)
        try GitCLI.run(["-c", "user.name=t", "-c", "user.email=t@t", "add", "."], in: dir.path + "/repo")
        try GitCLI.run(["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"], in: dir.path + "/repo")
        let fsck = try CommandRunner.run("/usr/bin/git", ["lfs", "fsck"], in: dir.path + "/repo", environment: [:])
        #expect(fsck.status == 0, "\(fsck.stdout) \(fsck.stderr)")
    }

    @Test func storingTheSameBytesTwiceKeepsOneObject() throws {
        let dir = try TemporaryDirectory()
        let bytes = randomBytes(100_000)
        for name in ["a", "b"] { #expect(FileManager.default.createFile(atPath: dir.path + "/" + name, contents: Data(bytes))) }
        let store = ContentStore(gitDirectory: dir.path + "/git")
        let a = try store.store(file: dir.path + "/a"), b = try store.store(file: dir.path + "/b")
        #expect(a == b)
        #expect(store.objects().map(\.oid) == [a.pointer.oid])
    }

    @Test func aChangedObjectIsNamedAndNeverCopiedOut() throws {
        let dir = try TemporaryDirectory()
        #expect(FileManager.default.createFile(atPath: dir.path + "/a", contents: Data(randomBytes(50_000))))
        let store = ContentStore(gitDirectory: dir.path + "/git")
        let stored = try store.store(file: dir.path + "/a")
        let object = store.path(of: stored.pointer.oid)
        chmod(object, 0o644)
        let handle = try #require(FileHandle(forWritingAtPath: object))
        try handle.seek(toOffset: 100)
        try handle.write(contentsOf: Data([1, 2, 3]))
        try handle.close()
        #expect(try !store.verify(stored.pointer))
        #expect(throws: ContentStore.Failure.self) { try store.copy(stored.pointer, to: dir.path + "/out") }
        #expect(!FileManager.default.fileExists(atPath: dir.path + "/out"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["a", "git"])
    }

    @Test func aDownloadThatIsNotWhatItsPointerSaysIsRefused() throws {
        let dir = try TemporaryDirectory()
        let store = ContentStore(gitDirectory: dir.path + "/git")
        let bytes = randomBytes(10_000)
        #expect(FileManager.default.createFile(atPath: dir.path + "/a", contents: Data(bytes)))
        let right = try store.store(file: dir.path + "/a").pointer
        _ = try store.drop(right.oid)
        // Cut short, then tampered with: neither takes the object's place.
        let short = try store.receive(right)
        try short.write(Array(bytes.prefix(5000)))
        #expect(throws: ContentStore.Failure.self) { try short.finish() }
        var changed = bytes
        changed[7] ^= 0xFF
        let tampered = try store.receive(right)
        try tampered.write(changed)
        #expect(throws: ContentStore.Failure.self) { try tampered.finish() }
        #expect(!store.has(right))
        #expect(ContentStore.list(dir.path + "/git/lfs/tmp").isEmpty)
        let good = try store.receive(right)
        try good.write(Array(bytes.prefix(3)))
        try good.write(Array(bytes.dropFirst(3)))
        #expect(try good.finish().pointer == right)
        try store.copy(right, to: dir.path + "/back")
        #expect(FileManager.default.contents(atPath: dir.path + "/back") == Data(bytes))
    }

    @Test func aLinkIsNotStored() throws {
        let dir = try TemporaryDirectory()
        try dir.write("secret", "the secret")
        symlink(dir.path + "/secret", dir.path + "/link")
        let store = ContentStore(gitDirectory: dir.path + "/git")
        #expect(throws: ContentStore.Failure.self) { try store.store(file: dir.path + "/link") }
    }
}
