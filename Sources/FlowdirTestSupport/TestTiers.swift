import FlowdirIO
import Foundation
import Testing

/// Tests by size and by the real component they need (ARCHITECTURE.md,
/// "Tests"): small (pure, fakes), medium (real folders, git, inotify,
/// servers on loopback), large (the built binary, end to end).
extension Tag {
    @Tag public static var small: Self
    @Tag public static var medium: Self
    @Tag public static var large: Self
    /// A real single-node Slurm (`scripts/slurm-local.sh`).
    @Tag public static var slurm: Self
    /// A real sshd on a loopback port (`scripts/sshd-local.sh`).
    @Tag public static var sshd: Self
    /// Debian's chromium driven by Selenium.
    @Tag public static var browser: Self
    /// A real cog server (PyPI cog, no Docker).
    @Tag public static var cog: Self
    /// giftless, a real Git LFS server.
    @Tag public static var lfsServer: Self
    /// Debian's ffmpeg (video thumbnails).
    @Tag public static var ffmpeg: Self
}

/// Something outside the package a test runs against. Run alone, a test
/// whose component is missing is skipped, saying how to get it; under
/// `scripts/test.sh`, which installs them all and sets
/// `FLOWDIR_REQUIRE_COMPONENTS=1`, it runs (and fails) instead: a CI never
/// skips silently.
public enum Component: String, CaseIterable, Sendable {
    case slurm, sshd, browser, cog, lfsServer, ffmpeg

    /// Why it cannot be used here and how to get it, or nil when it is here.
    public var missing: String? {
        switch self {
        case .slurm:
            guard Self.onPath("sbatch") else { return "no Slurm (sbatch): `sudo bash scripts/slurm-local.sh` installs and starts a one-node cluster" }
            guard (try? CommandRunner.run("/usr/bin/env", ["sinfo", "-h", "-o", "%T"]))?.status == 0 else {
                return "Slurm is installed but not running: `sudo bash scripts/slurm-local.sh` starts it"
            }
            return nil
        case .sshd:
            return Files.exists("/usr/sbin/sshd") ? nil : "no sshd: `sudo apt-get install openssh-server openssh-client` (or `bash scripts/setup.sh`)"
        case .browser:
            if !Files.exists("/usr/bin/chromium") { return "no chromium: `sudo apt-get install chromium chromium-driver` (or `bash scripts/setup.sh`)" }
            return Files.exists(Self.browserVenv + "/bin/python") ? nil : "no Selenium venv at \(Self.browserVenv): `bash scripts/setup.sh` makes it"
        case .cog:
            return CogProcess.isInstalled ? nil : "no cog venv at \(CogProcess.venv): `bash scripts/setup.sh` makes it"
        case .lfsServer:
            return Files.exists(LFSServerProcess.venv + "/bin/python") ? nil : "no giftless venv at \(LFSServerProcess.venv): `bash scripts/setup.sh` makes it"
        case .ffmpeg:
            return Files.exists("/usr/bin/ffmpeg") ? nil : "no ffmpeg: `sudo apt-get install ffmpeg` (or `bash scripts/setup.sh`)"
        }
    }

    /// `scripts/test.sh` sets it: a missing component fails, never skips.
    public static var required: Bool { ProcessInfo.processInfo.environment["FLOWDIR_REQUIRE_COMPONENTS"] == "1" }

    /// The venv of the browser tests: `$FLOWDIR_BROWSER_VENV`, else /opt/flowdir-browser.
    public static var browserVenv: String {
        ProcessInfo.processInfo.environment["FLOWDIR_BROWSER_VENV"].flatMap { $0.isEmpty ? nil : $0 } ?? "/opt/flowdir-browser"
    }

    /// The trait of a test (or suite) that needs this component: beside
    /// its tag, it skips the test when the component is missing (saying
    /// how to get it) and in the quick tier.
    /// Under `FLOWDIR_REQUIRE_COMPONENTS=1` a missing one fails the test,
    /// naming it (the condition throws), rather than skipping it.
    public var needed: ConditionTrait {
        let why = Tier.quick ? "needs \(rawValue): not in the quick tier (scripts/test.sh --quick)" : missing
        let component = self
        return .enabled(Comment(rawValue: why ?? "\(rawValue) is here")) {
            guard let why else { return true }
            if Self.required && !Tier.quick { throw Missing(component: component, why: why) }
            return false
        }
    }

    /// What a test that needs a component records when it is missing and required.
    public struct Missing: Error, CustomStringConvertible {
        public var component: Component
        public var why: String
        public var description: String { "scripts/test.sh needs \(component.rawValue), and it is missing: \(why)" }
    }

    static func onPath(_ program: String) -> Bool {
        (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").contains {
            FileManager.default.isExecutableFile(atPath: "\($0)/\(program)")
        }
    }
}

/// The quick tier (`scripts/test.sh --quick`, `FLOWDIR_TEST_TIER=quick`):
/// small and medium tests, none needing a component. The `swift test` of
/// Swift 6.3 cannot filter by tag, so the tag says what a suite is and this
/// trait, beside it, keeps it out of the quick tier.
public enum Tier {
    public static var quick: Bool { ProcessInfo.processInfo.environment["FLOWDIR_TEST_TIER"] == "quick" }

    /// Beside `.tags(.large)`.
    public static var notQuick: ConditionTrait {
        .enabled(if: !quick, "a large test (the built binary, end to end): not in the quick tier (scripts/test.sh --quick)")
    }
}
