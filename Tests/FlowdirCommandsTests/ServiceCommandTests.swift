import FlowdirCore
import FlowdirIO
import FlowdirTestSupport
import Foundation
import Testing

/// `flowdir service install` and `uninstall`, with the built binary and a
/// config folder of the test's own (no systemd is needed: they only write
/// and remove files). Off the cooperative pool: they wait on processes.
@Suite(.tags(.medium)) struct ServiceCommandTests {
    @Test func serviceInstallWritesAUserUnit() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            try FileManager.default.createDirectory(atPath: dir.path + "/flows", withIntermediateDirectories: true)
            let r = try CommandRunner.flowdir(["service", "install", "--root", dir.path + "/flows"], in: dir.path,
                                              environment: ["XDG_CONFIG_HOME": dir.path + "/config", "FLOWDIR_CONFIG": ""])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout.contains("systemctl --user daemon-reload && systemctl --user enable --now flowdir.service"))
            let unit = try String(contentsOfFile: dir.path + "/config/systemd/user/flowdir.service", encoding: .utf8)
            let real = try #require(Files.realPath(dir.path + "/flows"))
            #expect(unit.contains("ExecStart=\(Files.realPath(RepositoryPaths.flowdirExecutable)!) watch --grace 30 \(real)\n"))
            #expect(unit.contains("KillSignal=SIGTERM"))
            #expect(unit.contains("WantedBy=default.target"))
            let none = try CommandRunner.flowdir(["service", "install"], in: dir.path,
                                                 environment: ["XDG_CONFIG_HOME": dir.path + "/config", "FLOWDIR_CONFIG": ""])
            #expect(none.status == 1)
            #expect(none.stderr.contains("no folder to watch"))
        }
    }

    @Test func uninstallRemovesOnlyWhatInstallWroteWithItsEnablingLink() async throws {
        try await offPool {
            let dir = try TemporaryDirectory()
            try FileManager.default.createDirectory(atPath: dir.path + "/flows", withIntermediateDirectories: true)
            let env = ["XDG_CONFIG_HOME": dir.path + "/config", "FLOWDIR_CONFIG": ""]
            let units = dir.path + "/config/systemd/user"
            #expect(try CommandRunner.flowdir(["service", "install", "--root", dir.path + "/flows"], in: dir.path, environment: env).status == 0)
            // What `systemctl --user enable` makes, beside it another unit of the person's.
            try FileManager.default.createDirectory(atPath: units + "/default.target.wants", withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: units + "/default.target.wants/flowdir.service", withDestinationPath: "../flowdir.service")
            try dir.write("config/systemd/user/other.service", "[Service]\nExecStart=/bin/true\n")

            let r = try CommandRunner.flowdir(["service", "uninstall"], in: dir.path, environment: env)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout.contains("Removed \(units)/flowdir.service and its link in default.target.wants."), "\(r.stdout)")
            #expect(r.stdout.contains("systemctl --user stop flowdir.service && systemctl --user daemon-reload"))
            #expect(!Files.exists(units + "/flowdir.service"))
            #expect(!Files.exists(units + "/default.target.wants/flowdir.service"))
            #expect(Files.exists(units + "/other.service"))

            // Again: nothing left, and that is no error.
            let again = try CommandRunner.flowdir(["service", "uninstall"], in: dir.path, environment: env)
            #expect(again.status == 0 && again.stdout.contains("nothing to remove"), "\(again.stdout)\(again.stderr)")

            // A flowdir.service a person wrote is never removed.
            try dir.write("config/systemd/user/flowdir.service", "[Service]\nExecStart=/usr/bin/flowdir watch /srv\n")
            let theirs = try CommandRunner.flowdir(["service", "uninstall"], in: dir.path, environment: env)
            #expect(theirs.status == 1)
            #expect(theirs.stderr.contains("was not written by `flowdir service install`"), "\(theirs.stderr)")
            #expect(Files.exists(units + "/flowdir.service"))
        }
    }
}
