import FlowdirTestSupport
import Foundation
import Testing

/// Absurd numbers end to end (issue #41): `check` reports them with their
/// place, and no command crashes on them — not `run`, not a later `run`
/// that finds a request file a crashed command left.
@Suite(.tags(.large), Tier.notQuick) struct HostileNumbersTests {
    static let template = """
        schema: app.workflow/v2
        name: Ask
        nodes:
          - id: pick
            kind: UserAssetPicker
            outputs: { image: ImageRef }
            await: { type: select_asset, expiresIn: EXPIRES }
        """

    final class Setup: @unchecked Sendable {
        let dir: TemporaryDirectory
        let env: [String: String]
        var inst: String { dir.path + "/inst" }

        init(expires: String = "1h") throws {
            dir = try TemporaryDirectory()
            try dir.write("config.yaml", "notifications: false\n")
            try dir.write("t.yaml", HostileNumbersTests.template.replacingOccurrences(of: "EXPIRES", with: expires))
            env = ["XDG_CONFIG_HOME": "/nonexistent", "FLOWDIR_CONFIG": dir.path + "/config.yaml", "XDG_STATE_HOME": dir.path + "/state"]
        }

        func flowdir(_ args: [String]) throws -> CommandResult {
            try CommandRunner.flowdir(args, in: dir.path, environment: env)
        }
    }

    @Test func checkReportsAnExpiryBeyondAHundredYearsWithItsPlace() throws {
        let s = try Setup(expires: "PT99999999999999999H")
        let r = try s.flowdir(["check", "t.yaml"])
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.contains("t.yaml:7:45: error[invalidAwait]"), "\(r.stdout)")
        #expect(r.stdout.contains("100 years"), "\(r.stdout)")
        // Refused before anything is made.
        #expect(try s.flowdir(["new", "t.yaml", "inst"]).status != 0)
        #expect(!FileManager.default.fileExists(atPath: s.inst))
    }

    /// A workflow.yaml edited (or pulled) to hold it: `run` says so and exits, no trap.
    @Test func runOnAnEditedWorkflowSaysWhatIsWrong() throws {
        let s = try Setup()
        #expect(try s.flowdir(["new", "t.yaml", "inst"]).status == 0)
        let wf = s.inst + "/workflow.yaml"
        let text = try String(contentsOfFile: wf, encoding: .utf8)
        try text.replacingOccurrences(of: "expiresIn: 1h", with: "expiresIn: PT99999999999999999H")
            .write(toFile: wf, atomically: true, encoding: .utf8)
        #expect(try String(contentsOfFile: wf, encoding: .utf8).contains("PT99999999999999999H"))
        for _ in 0..<2 {
            let r = try s.flowdir(["run", "inst"])
            #expect(r.status == 1 || r.status == 2, "\(r.status): \(r.stderr)")
            #expect(!r.stderr.contains("Fatal error"), "\(r.stderr)")
            #expect((r.stdout + r.stderr).contains("expiresIn"), "\(r.stdout)\(r.stderr)")
        }
    }

    @Test func anAbsurdSnoozeIsRefusedOnTheCommandLine() throws {
        let s = try Setup()
        #expect(try s.flowdir(["new", "t.yaml", "inst"]).status == 0)
        #expect(try s.flowdir(["run", "inst"]).status == 2)
        for bad in ["99999999999999999999s", "PT99999999999999999H"] {
            let r = try s.flowdir(["snooze", "inst/pick", "--for", bad])
            #expect(r.status == 1, "\(r.stderr)")
            #expect(r.stderr.contains("100 years"), "\(r.stderr)")
        }
        for bad in ["infs", "nans", "1e19s"] {
            let r = try s.flowdir(["snooze", "inst/pick", "--for", bad])
            #expect(r.status == 1 && r.stderr.contains("is not a duration"), "\(r.stderr)")
        }
        #expect(try s.flowdir(["snooze", "inst/pick", "--for", "2h"]).status == 0)
    }

    /// Seconds on the command line become timers: out of range, refused before anything starts.
    @Test func absurdSecondsOnTheCommandLineAreRefused() throws {
        let s = try Setup()
        for args in [["watch", ".", "--grace", "nan"], ["watch", ".", "--grace", "1e300"], ["serve", ".", "--port", "0", "--grace", "inf"],
                     ["cancel", "x", "y", "--wait", "1e19"], ["polling", "pause", "x", "--wait", "inf"]] {
            // Under `timeout`: a flowdir that took the value would watch (or serve) on.
            let r = try CommandRunner.run("/usr/bin/timeout", ["20", RepositoryPaths.flowdirExecutable] + args, in: s.dir.path, environment: s.env)
            #expect(r.status != 0 && r.status != 124, "\(args): \(r.status)")
            #expect(r.stderr.contains("must be a number of seconds"), "\(args): \(r.stderr)")
            #expect(!r.stderr.contains("Fatal error"))
        }
    }

    /// The pages' API or a hand-written file can still leave such a request:
    /// it is set aside with why, once, and every later run goes on.
    @Test func aPoisonedRequestFileIsSetAsideNotRetried() throws {
        let s = try Setup()
        #expect(try s.flowdir(["new", "t.yaml", "inst"]).status == 0)
        #expect(try s.flowdir(["run", "inst"]).status == 2)
        let requests = s.inst + "/.flowdir/requests"
        try FileManager.default.createDirectory(atPath: requests, withIntermediateDirectories: true)
        try "verb: snooze\nnode: pick\nby: ann\nduration: 1e19\n".write(toFile: requests + "/r1.request.yaml", atomically: true, encoding: .utf8)
        for _ in 0..<3 {
            let r = try s.flowdir(["run", "inst"])
            #expect(r.status == 2, "\(r.status): \(r.stderr)")
        }
        let why = try String(contentsOfFile: requests + "/rejected/r1.why.txt", encoding: .utf8)
        #expect(why.contains("duration"), "\(why)")
        #expect(!FileManager.default.fileExists(atPath: requests + "/r1.request.yaml"))
        #expect(try String(contentsOfFile: requests + "/r1.result", encoding: .utf8).hasPrefix("refused\n"))
        // The question is as it was, and answers still work.
        #expect(try s.flowdir(["snooze", "inst/pick", "--for", "1h"]).status == 0)
    }
}
