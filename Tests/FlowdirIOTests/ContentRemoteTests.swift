#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
@testable import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// Content going to and coming from the three kinds of remote, each real:
/// a repository on this machine, one over ssh (a loopback sshd), and a
/// Git LFS server (giftless) with credentials from git's helpers.
@Suite(.tags(.medium)) struct ContentRemoteTests {
    func randomFile(_ path: String, _ n: Int) -> [UInt8] {
        var rng = SystemRandomNumberGenerator()
        let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
        FileManager.default.createFile(atPath: path, contents: Data(bytes))
        return bytes
    }

    @Test func urlsAreReadAsGitReadsThem() {
        #expect(RemoteLocation.parse("/srv/hub.git", base: "/x") == .path("/srv/hub.git"))
        #expect(RemoteLocation.parse("file:///srv/hub.git", base: "/x") == .path("/srv/hub.git"))
        #expect(RemoteLocation.parse("../hub.git", base: "/x/y") == .path("/x/y/../hub.git"))
        #expect(RemoteLocation.parse("gpu:/srv/hub.git", base: "/x") == .ssh(destination: "gpu", port: nil, path: "/srv/hub.git"))
        #expect(RemoteLocation.parse("me@gpu:hub.git", base: "/x") == .ssh(destination: "me@gpu", port: nil, path: "hub.git"))
        #expect(RemoteLocation.parse("ssh://me@gpu:2222/srv/hub.git", base: "/x") == .ssh(destination: "me@gpu", port: 2222, path: "/srv/hub.git"))
        #expect(RemoteLocation.parse("ssh://gpu/~/hub.git", base: "/x") == .ssh(destination: "gpu", port: nil, path: "~/hub.git"))
        #expect(RemoteLocation.parse("https://git.example.org/org/repo", base: "/x") == .lfsServer("https://git.example.org/org/repo.git/info/lfs"))
        #expect(RemoteLocation.parse("https://git.example.org/org/repo.git/", base: "/x") == .lfsServer("https://git.example.org/org/repo.git/info/lfs"))
        #expect(RemoteLocation.parse("gpu:/x", base: "/x", lfsURL: "http://lfs:8080/r") == .lfsServer("http://lfs:8080/r"))
        // An option in disguise is no remote at all.
        #expect(RemoteLocation.parse("-oProxyCommand=x", base: "/x") == nil)
        #expect(RemoteLocation.parse("ssh://-oProxyCommand=x/p", base: "/x") == nil)
    }

    /// Upload, look-up, download and the refusals every remote must make.
    func exercise(_ remote: any ContentRemote, hubObjects: String?, dir: TemporaryDirectory) async throws {
        let store = ContentStore(gitDirectory: dir.path + "/a.git")
        let bytes = randomFile(dir.path + "/big", ContentStore.chunk + 777)
        let p = try store.store(file: dir.path + "/big").pointer
        let other = try store.store(file: { _ = randomFile(dir.path + "/other", 1000); return dir.path + "/other" }()).pointer
        #expect(try await remote.holding([p, other]).isEmpty)
        #expect(try await remote.upload([p], from: store) == [p.oid])
        #expect(try await remote.holding([p, other]) == [p.oid])
        // Sent again, it is not sent: the remote already holds it (and says so).
        #expect(try await remote.upload([p], from: store).isEmpty)
        if let hubObjects {
            #expect(FileManager.default.contents(atPath: hubObjects + "/" + p.objectPath.dropFirst("lfs/".count)) == Data(bytes))
        }
        // Fetched into another store whole, and checked.
        let b = ContentStore(gitDirectory: dir.path + "/b.git")
        try await remote.download([p], into: b)
        #expect(b.has(p))
        #expect(try b.verify(p))
        // What the remote lacks is said so.
        await #expect(throws: ContentRemoteError.self) { try await remote.download([other], into: b) }
        // A local object changed by hand is never sent.
        let object = store.path(of: other.oid)
        chmod(object, 0o644)
        let h = try #require(FileHandle(forWritingAtPath: object))
        try h.write(contentsOf: Data([9, 9, 9]))
        try h.close()
        var refusal = ""
        do { try await remote.upload([other], from: store) } catch { refusal = "\(error)" }
        #expect(refusal.hasPrefix("not sent:"), "\(refusal)")
        #expect(try await remote.holding([other]).isEmpty)
    }

    @Test func aRepositoryOnThisMachine() async throws {
        let dir = try TemporaryDirectory()
        try GitCLI.run(["init", "-q", "--bare", dir.path + "/hub.git"], in: dir.path)
        let remote = LocalContentRemote(name: "origin", repository: dir.path + "/hub.git")
        #expect(remote.gitDirectory == dir.path + "/hub.git")
        try await exercise(remote, hubObjects: dir.path + "/hub.git/lfs", dir: dir)
        // A repository that is not there (an unmounted disk) is unreachable, not empty.
        let gone = LocalContentRemote(name: "origin", repository: dir.path + "/nowhere.git")
        do {
            _ = try await gone.holding([LFSPointer(oid: String(repeating: "a", count: 64), size: 1)!])
            Issue.record("a missing repository answered")
        } catch { #expect(error.isUnreachable) }
    }

    @Test(.tags(.sshd), Component.sshd.needed) func aRepositoryOverSSH() async throws {
        try #require(Files.exists("/usr/sbin/sshd"), "no sshd: `bash scripts/setup.sh` installs openssh-server")
        let dir = try TemporaryDirectory()
        let server = try SSHServer(dir: dir.path + "/ssh")
        try GitCLI.run(["init", "-q", "--bare", dir.path + "/hub.git"], in: dir.path)
        let remote = SSHContentRemote(name: "origin", destination: "flowdir-test", port: nil, path: dir.path + "/hub.git",
                                      sshCommand: "ssh -F \(server.dir)/ssh_config")
        try await exercise(remote, hubObjects: dir.path + "/hub.git/lfs", dir: dir)
        // The host gone mid-way: unreachable, and the store unchanged.
        server.stop()
        let c = ContentStore(gitDirectory: dir.path + "/c.git")
        let p = try ContentStore(gitDirectory: dir.path + "/a.git").objects().first.map { LFSPointer(oid: $0.oid, size: $0.size)! }!
        do {
            try await remote.download([p], into: c)
            Issue.record("a stopped sshd answered")
        } catch { #expect(error.isUnreachable, "\(error)") }
        #expect(!c.has(p) && ContentStore.list(dir.path + "/c.git/lfs/tmp").isEmpty)
    }

    @Test(.tags(.lfsServer), Component.lfsServer.needed) func aGitLFSServerWithTheUsersCredentials() async throws {
        try #require(Files.exists(LFSServerProcess.venv + "/bin/python"), "no giftless at \(LFSServerProcess.venv): `bash scripts/setup.sh` makes it")
        let dir = try TemporaryDirectory()
        let server = try LFSServerProcess(dir: dir.path + "/lfs")
        // git's own credential store, as a user's helper would answer.
        try "http://\(server.user):\(server.password)@127.0.0.1:\(server.port)\n".write(toFile: dir.path + "/credentials", atomically: true, encoding: .utf8)
        try "[credential]\n\thelper = store --file \(dir.path)/credentials\n".write(toFile: dir.path + "/gitconfig", atomically: true, encoding: .utf8)
        let env = ["GIT_CONFIG_GLOBAL": dir.path + "/gitconfig", "GIT_CONFIG_NOSYSTEM": "1"]
        let remote = LFSBatchRemote(name: "origin", url: server.batchURL) { url in await GitCredential.fill(url, environment: env) }
        try await exercise(remote, hubObjects: nil, dir: dir)
        // Without credentials: refused, with the reason.
        let anonymous = LFSBatchRemote(name: "origin", url: server.batchURL) { _ in nil }
        do {
            _ = try await anonymous.holding([LFSPointer(oid: String(repeating: "a", count: 64), size: 1)!])
            Issue.record("the server answered without credentials")
        } catch { #expect("\(error)".contains("401"), "\(error)") }
    }
}
