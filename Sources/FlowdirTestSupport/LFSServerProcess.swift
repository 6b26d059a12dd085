#if canImport(Glibc)
import Glibc
#endif
import FlowdirIO
import Foundation

/// A real Git LFS server (giftless, from PyPI) on a free loopback port,
/// its objects in `dir/storage`, asking for HTTP Basic credentials
/// (`user`, `password`) before any write or read.
public final class LFSServerProcess {
    public let port: Int
    public let dir: String
    public let user = "flowdir"
    public let password = "lfs-" + String(UUID().uuidString.prefix(8))
    let leader: GroupLeader

    /// The venv `scripts/setup.sh` makes: `$FLOWDIR_LFS_VENV`, else /opt/flowdir-lfs.
    public static var venv: String {
        getenv("FLOWDIR_LFS_VENV").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/opt/flowdir-lfs"
    }

    public init(dir: String) throws {
        self.dir = dir
        try Files.makeDirectories(dir + "/storage")
        port = try FreePort.pick()
        let config = """
            AUTH_PROVIDERS:
              - basic_auth:basic
            TRANSFER_ADAPTERS:
              basic:
                factory: giftless.transfer.basic_streaming:factory
                options:
                  storage_class: giftless.storage.local_storage:LocalStorage
                  storage_options:
                    path: \(dir)/storage
            """
        try config.write(toFile: dir + "/giftless.yaml", atomically: true, encoding: .utf8)
        let log = dir + "/giftless.log"
        let command = "exec python -m flask --app giftless.wsgi_entrypoint run --host 127.0.0.1 --port \(port) >"
            + JobServerProcess.quote(log) + " 2>&1"
        leader = try GroupLeader(["/bin/sh", "-c", command], directory: dir, environment: [
            "PATH": Self.venv + "/bin:/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp",
            "PYTHONPATH": RepositoryPaths.root + "/Tests/FlowdirIOTests/Fixtures/giftless",
            "GIFTLESS_CONFIG_FILE": dir + "/giftless.yaml",
            "FLOWDIR_TEST_LFS_USER": user, "FLOWDIR_TEST_LFS_PASSWORD": password,
        ])
        // Ready when it answers at all (401 without credentials); a bound against a hang.
        let up = try Eventually.blockingUntil(timeout: .seconds(90), every: .milliseconds(100)) {
            try CommandRunner.run("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "2", "-X", "POST", batchURL + "/objects/batch"])
                .stdout == "401"
        }
        if up { return }
        leader.end()
        throw JobServerProcess.Failed(log: (try? LocalFileSystem().readFile(log, limit: 1 << 16)).map { String(decoding: $0, as: UTF8.self) } ?? "")
    }

    /// The LFS API of repository `org/repo`, as git-lfs derives it from `http://HOST/org/repo.git`.
    public var batchURL: String { "http://127.0.0.1:\(port)/org/repo.git/info/lfs" }

    public func stop() { leader.end() }

    deinit { leader.end() }
}
