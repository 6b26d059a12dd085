#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirTestSupport
import Foundation
import Testing

/// Remote jobs end to end: the built flowdir, the built job server, its
/// faults, the watcher, polling pause, webhooks, and the token kept secret.
@Suite(.serialized, .tags(.large), Tier.notQuick) struct RemoteJobTests {
    @Test func aRemoteNodeRunsOnTheJobServerAndItsLogAndStatesAreKept() async throws {
        try await offPool {
            let s = try RemoteJobSetup()
            let inst = try s.new()
            let r = try s.flowdir(["run", inst])
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            #expect(try String(contentsOfFile: inst + "/nodes/r/out/out.txt", encoding: .utf8) == "remote")
            #expect(try String(contentsOfFile: inst + "/nodes/r/runs/1/log.txt", encoding: .utf8).contains("working on remote"))
            let history = try GitCLI.run(["log", "--reverse", "--format=%B"], in: inst)
            let seen = history.split(separator: "\n").filter { $0.hasPrefix("Flowdir-Transition: r ") }.map { $0.split(separator: " ")[2] }
            #expect(seen == ["→ready", "ready→queuedRemote", "queuedRemote→runningRemote", "runningRemote→downloading", "downloading→succeeded"])
            #expect(s.predictions().count == 1)
        }
    }

    /// A short job's result comes with the answer to its create (`Prefer:
    /// wait`), not with a poll an interval later: at the default 10 s
    /// interval the job server is never asked about it, so the run ended
    /// before the first poll was due.
    @Test func aShortJobsResultComesWithItsCreateNotWithAPoll() async throws {
        try await offPool {
            let s = try RemoteJobSetup(endpoint: "pollInterval: 10s", nodes: "  - { id: r, kind: Remote, params: { text: quick, sleep: 0.3 } }\n")
            let inst = try s.new()
            let r = try s.flowdir(["run", inst])
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            #expect(try String(contentsOfFile: inst + "/nodes/r/out/out.txt", encoding: .utf8) == "quick")
            #expect(s.requests("POST", "/v1/models/").count == 1)
            #expect(s.requests("GET", "/v1/predictions").isEmpty, "\(s.server.accessLog)")
            let history = try GitCLI.run(["log", "--reverse", "--format=%B"], in: inst)
            let seen = history.split(separator: "\n").filter { $0.hasPrefix("Flowdir-Transition: r ") }.map { $0.split(separator: " ")[2] }
            #expect(seen == ["→ready", "ready→queuedRemote", "queuedRemote→runningRemote", "runningRemote→downloading", "downloading→succeeded"])
        }
    }

    /// Longer than the wait: the create is answered after it, the job polled
    /// as before (the first poll at once) and its result taken.
    @Test func aJobLongerThanTheWaitIsPolledAfterIt() async throws {
        try await offPool {
            let s = try RemoteJobSetup(endpoint: "pollInterval: 1s, syncWait: 1s", nodes: "  - { id: r, kind: Remote, params: { text: long, sleep: 2.5 } }\n")
            let inst = try s.new()
            let r = try s.flowdir(["run", inst])
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            #expect(try String(contentsOfFile: inst + "/nodes/r/out/out.txt", encoding: .utf8) == "long")
            #expect(s.requests("POST", "/v1/models/").count == 1 && s.predictions().count == 1)
            #expect(s.requests("GET", "/v1/predictions").count >= 2, "\(s.server.accessLog)")
        }
    }

    /// Cancelled while its create is held: the cancel goes to the job
    /// server once the create's answer names the job, and the job ends there.
    @Test func cancelledWhileItsCreateIsHeldTheJobIsCancelledThere() async throws {
        try await offPool {
            let s = try RemoteJobSetup(endpoint: "syncWait: 3s", nodes: "  - { id: r, kind: Remote, params: { text: held, sleep: 60 } }\n")
            let inst = try s.new()
            let run = try s.start(["run", inst])
            try s.waitFor("the prediction to be made") { s.predictions().count == 1 }
            #expect(try s.flowdir(["cancel", inst, "r"]).status == 0)
            run.waitUntilExit()
            #expect(s.state(inst, "r") == "cancelled")
            try s.waitFor("the prediction to be canceled") { s.predictions().first?["status"] as? String == "canceled" }
            #expect(s.predictions().count == 1)
        }
    }

    // MARK: Faults (docs/templates-and-tools.md, `run.http`)

    @Test func submitRetriesWaitOneThenFourTimesTheFirstDelay() async throws {
        try await offPool {
            let s = try RemoteJobSetup(endpoint: "retryDelays: [0.5s, 2s, 2s]", faults: """
                faults:
                  - route: POST /v1/models/*/predictions
                    responses: [503, 503]
                """)
            let inst = try s.new()
            let r = try s.flowdir(["run", inst])
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            let posts = s.requests("POST", "/v1/models/")
            try #require(posts.count == 3, "\(s.server.accessLog)")
            let (first, second) = (posts[1] - posts[0], posts[2] - posts[1])
            // At least 1× and 4× the first delay, less a quarter's jitter. Only
            // the least is asserted: a loaded machine answers late, never early.
            // The delays themselves are `RemotePolicyTests`'.
            #expect(first >= 0.375, "\(first)")
            #expect(second >= 1.5, "\(second)")
            #expect(s.predictions().count == 1)
        }
    }

    @Test func retryAfterIsWaitedFirst() async throws {
        try await offPool {
            // Retry-After: 45, scaled by 0.01: 0.45 s, not the 5 s of the first delay.
            let s = try RemoteJobSetup(endpoint: "retryDelays: [5s, 5s, 5s], delayScale: 0.01", faults: """
                faults:
                  - route: POST /v1/models/*/predictions
                    responses: [{ status: 429, retryAfter: 45 }]
                """)
            let inst = try s.new()
            #expect(try s.flowdir(["run", inst]).status == 0)
            let posts = s.requests("POST", "/v1/models/")
            try #require(posts.count == 2)
            // Not the first delay (0.05 s scaled); only the least is asserted, as above.
            #expect(posts[1] - posts[0] >= 0.44, "\(posts[1] - posts[0])")
        }
    }

    @Test func fourGatewayTimeoutsFailAfterThreeRetries() async throws {
        try await offPool {
            let s = try RemoteJobSetup(endpoint: "retryDelays: [0.1s, 0.1s, 0.1s]", faults: """
                faults:
                  - route: POST /v1/models/*/predictions
                    responses: [504, 504, 504, 504]
                """)
            let inst = try s.new()
            let r = try s.flowdir(["run", inst])
            #expect(r.status == 1)
            #expect(s.requests("POST", "/v1/models/").count == 4)
            let state = s.stateFile(inst, "r")
            #expect(state.contains("reason: \"gave up after 3 retries: 504"), "\(state)")
            #expect(s.state(inst, "l") == "succeeded")
        }
    }

    @Test func aDroppedConnectionAndALateAnswerMakeOnePredictionEach() async throws {
        try await offPool {
            let s = try RemoteJobSetup(endpoint: "retryDelays: [0.2s, 0.2s, 0.2s], requestTimeout: 0.5s", faults: """
                faults:
                  - route: POST /v1/models/*/predictions
                    responses: [{ reset: true }, { delay: 1.5 }]
                """, nodes: "  - { id: a, kind: Remote, params: { text: A } }\n")
            let inst = try s.new()
            // The reset: nothing was made, it is sent again. The late answer: it was made;
            // found in the list, not sent again.
            let r = try s.flowdir(["run", inst])
            #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
            #expect(s.predictions().count == 1, "\(s.server.accessLog)")
            #expect(s.requests("GET", "/v1/predictions").count >= 1)
        }
    }

    @Test func aBodyThatIsNotTheAPIsFailsAtOnceWithAHint() async throws {
        try await offPool {
            let s = try RemoteJobSetup(faults: """
                faults:
                  - route: POST /v1/models/*/predictions
                    responses: [{ status: 200, body: "<html>gateway</html>" }]
                """)
            let inst = try s.new()
            let r = try s.flowdir(["run", inst])
            #expect(r.status == 1)
            #expect(s.requests("POST", "/v1/models/").count == 1)
            let state = s.stateFile(inst, "r")
            #expect(state.contains("not the API's JSON: <html>gateway</html>"), "\(state)")
            #expect(state.contains("Replicate-compatible"), "\(state)")
        }
    }

    /// Killed after the job server made the prediction and before its answer
    /// came: the next run finds it (its uploaded input compared by its bytes)
    /// and does not send it again.
    @Test func killedBeforeTheAnswerTheJobIsFoundNotSentAgain() async throws {
        try await offPool {
            let s = try RemoteJobSetup(endpoint: "inlineLimit: 100B", faults: """
                faults:
                  - route: POST /v1/models/*/predictions
                    responses: [{ delay: 4 }]
                """)
            try s.dir.write("wf/t.yaml", """
                schema: app.workflow/v2
                name: Sized
                nodes:
                  - { id: l, kind: Local, params: { text: \(String(repeating: "x", count: 2000)) } }
                  - { id: s, kind: Sized, inputs: { a: TextRef } }
                edges: [l.out -> s.a]
                """)
            try s.dir.write("server/tools/Size.yaml", """
                kind: Size
                inputs: { a: TextRef }
                outputs: { out: TextRef }
                run:
                  command: [sh, -c, 'wc -c < "$1" > "$0"', "{outputs.out}", "{inputs.a}"]
                """)
            try s.dir.write("wf/tools/Sized.yaml", """
                kind: Sized
                resources: remote
                inputs: { a: TextRef }
                outputs: { out: TextRef }
                run:
                  http: { endpoint: gpu, model: tools/Size, input: { a: "{inputs.a}" }, outputs: { out: output } }
                """)
            s.server.stop()
            try s.restartServer()  // to load the new tool
            let inst = try s.new()
            let run = try s.start(["run", inst])
            try s.waitFor("the prediction to be made") { s.predictions().count == 1 }
            kill(run.processIdentifier, SIGKILL)
            run.waitUntilExit()
            #expect(!s.stateFile(inst, "s").contains("job: "))
            let again = try s.flowdir(["run", inst])
            #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
            #expect(s.predictions().count == 1, "\(s.server.accessLog)")
            #expect(s.requests("POST", "/v1/files").count == 1)
            #expect(try String(contentsOfFile: inst + "/nodes/s/out/out.txt", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) == "2000")
        }
    }

    /// Two instances of one template send the same input. The second,
    /// killed before it knew whether its job was made, must not take the
    /// first's older prediction for its own: it sends its own.
    @Test func anotherInstancesPredictionOfTheSameInputIsNotTakenForThisOne() async throws {
        try await offPool {
            let s = try RemoteJobSetup(faults: """
                faults:
                  - route: POST /v1/models/*/predictions
                    responses: [{ delay: 0 }, { status: 429, retryAfter: 60 }]
                """, nodes: "  - { id: r, kind: Remote, params: { text: same } }\n")
            let first = try s.new("first")
            #expect(try s.flowdir(["run", first]).status == 0)
            func job(_ inst: String) throws -> Substring? {
                try String(contentsOfFile: inst + "/nodes/r/runs/1/run.yaml", encoding: .utf8).firstMatch(of: /job: (\S+)/)?.1
            }
            let firstJob = try #require(try job(first))
            usleep(2_100_000)  // a run record's time is to the second; the backend's clock is allowed one more
            let second = try s.new("second")
            let run = try s.start(["run", second])
            // Its key committed, its send refused for a minute: killed not knowing whether it was made.
            try s.waitFor("the second send to be refused") { s.requests("POST", "/v1/models/").count == 2 }
            try s.waitFor("the submission key") { s.stateFile(second, "r").contains("submission: ") }
            kill(run.processIdentifier, SIGKILL)
            run.waitUntilExit()
            #expect(!s.stateFile(second, "r").contains("job: "))
            let again = try s.flowdir(["run", second])
            #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
            #expect(s.predictions().count == 2, "\(s.server.accessLog)")
            let secondJob = try #require(try job(second))
            #expect(secondJob != firstJob)
        }
    }

    // MARK: Offline, polling pause, webhooks

    @Test func offlineBlocksRemoteNodesLocalOnesFinishAndTheyResumeByThemselves() async throws {
        try await offPool {
            let s = try RemoteJobSetup(port: try FreePort.pick())
            s.server.stop()
            let inst = try s.new()
            try s.startWatch()
            try s.waitFor("l to succeed") { s.state(inst, "l") == "succeeded" }
            try s.waitFor("r to be blocked offline") { s.stateFile(inst, "r").contains("reason: \"Offline: 'gpu' unreachable since ") }
            try s.restartServer()
            try s.waitFor("r to succeed") { s.state(inst, "r") == "succeeded" }
            #expect(s.predictions().count == 1)
            s.stopWatch()
        }
    }

    @Test func runWaitsOnNoUnreachableEndpointAndTheNextRunSendsTheJob() async throws {
        try await offPool {
            let s = try RemoteJobSetup(port: try FreePort.pick())
            s.server.stop()
            let inst = try s.new()
            let first = try s.flowdir(["run", inst])
            #expect(first.status == 2, "\(first.stdout)\(first.stderr)")
            #expect(first.stdout.contains("blocked r — Offline: 'gpu' unreachable since "), "\(first.stdout)")
            #expect(s.state(inst, "l") == "succeeded")
            try s.restartServer()
            let second = try s.flowdir(["run", inst])
            #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
            #expect(s.predictions().count == 1)
            #expect(s.stateFile(inst, "r").contains("run: 1"))
        }
    }

    @Test func pausedPollingAsksNothingAndResumePicksUpTheResult() async throws {
        try await offPool {
            // Sent without waiting: the job is running, and polled, when polling is paused.
            let s = try RemoteJobSetup(endpoint: "syncWait: 0s", nodes: "  - { id: r, kind: Remote, params: { text: slow, sleep: 2 } }\n")
            let inst = try s.new()
            try s.startWatch()
            try s.waitFor("r to run") { s.state(inst, "r") == "runningRemote" }
            let paused = try s.flowdir(["polling", "pause", inst])
            #expect(paused.status == 0, "\(paused.stderr)")
            #expect(paused.stdout.contains("Paused polling"))
            let since = Date().timeIntervalSince1970 + 0.3  // a poll already on its way may land
            #expect(try String(contentsOfFile: inst + "/instance.yaml", encoding: .utf8).contains("polling: paused"))
            try s.waitFor("the job to end on the server") { s.predictions().first?["status"] as? String == "succeeded" }
            usleep(600_000)
            #expect(s.state(inst, "r") == "runningRemote")
            #expect(s.requests("GET", "/v1/predictions").filter { $0 > since }.isEmpty, "\(s.server.accessLog.suffix(5))")
            #expect(try s.flowdir(["polling", "resume", inst]).status == 0)
            try s.waitFor("r to succeed") { s.state(inst, "r") == "succeeded" }
            s.stopWatch()
        }
    }

    /// Its end comes by the webhook, long before the next poll would be due
    /// (how soon is a speed figure, which a loaded machine can miss, not a test's).
    @Test func withAWebhookAJobsEndIsCommittedWithoutWaitingForAPoll() async throws {
        try await offPool {
            // Sent without waiting, so the end comes by the webhook, not with the create's answer.
            let s = try RemoteJobSetup(endpoint: "pollInterval: 10m, syncWait: 0s", webhookPort: try FreePort.pick(),
                                       nodes: "  - { id: r, kind: Remote, params: { text: hooked, sleep: 1 } }\n")
            let inst = try s.new()
            try s.startWatch()
            try s.waitFor("r to succeed") { s.state(inst, "r") == "succeeded" }
            let seen = Date().timeIntervalSince1970
            let completed = try #require((s.predictions().first?["completed_at"] as? String).flatMap { Timestamp(iso8601: $0) })
            // Well before the poll due ten minutes after the first: the bound
            // only tells that from a loaded machine's slowness.
            #expect(seen - completed.seconds < 300, "\(seen - completed.seconds)")
            // Not by polling: one GET at most (the poll after submitting), none near the end.
            #expect(s.requests("GET", "/v1/predictions").filter { $0 > completed.seconds - 0.5 }.isEmpty)
            s.stopWatch()
            // The watcher's log has neither the token nor the webhook secret.
            let log = try String(contentsOfFile: s.watchLog, encoding: .utf8)
            #expect(!log.contains(RemoteJobSetup.token) && !log.contains(RemoteJobSetup.webhookSecret))
        }
    }

    // MARK: The token

    @Test func theTokenIsNowhereAndAReadableSecretsFileIsRefused() async throws {
        try await offPool {
            let s = try RemoteJobSetup()
            let inst = try s.new()
            let ok = try s.flowdir(["run", inst])
            #expect(ok.status == 0, "\(ok.stderr)")
            // A wrong token: refused with a hint, and the wrong token is not in the words either.
            let wrong = "wrong-9d8c7b6a5f4e"
            let bad = try s.new("bad")
            let refused = try s.flowdir(["run", bad], environment: ["FLOWDIR_TOKEN_GPU": wrong])
            #expect(refused.status == 1)
            let state = s.stateFile(bad, "r")
            #expect(state.contains("401") && state.contains("check the token for endpoint 'gpu' in secrets.yaml (or FLOWDIR_TOKEN_GPU)"), "\(state)")
            var everything = ok.stdout + ok.stderr + refused.stdout + refused.stderr
            for i in [inst, bad] {
                everything += try GitCLI.run(["log", "-p", "--all", "--format=%H %an %ae %B"], in: i)
                let files = FileManager.default.enumerator(atPath: i)!.compactMap { $0 as? String }.filter { !$0.hasPrefix(".git/") }
                for f in files { everything += (try? String(contentsOfFile: i + "/" + f, encoding: .utf8)) ?? "" }
            }
            let logs = try s.flowdir(["logs", inst, "r"])
            everything += logs.stdout + logs.stderr + (try s.flowdir(["show", bad])).stdout
            #expect(!everything.contains(RemoteJobSetup.token))
            #expect(!everything.contains(wrong))
            #expect(everything.contains("working on remote"))  // the grep reads what it should

            chmod(s.dir.path + "/secrets.yaml", 0o644)
            let open = try s.flowdir(["run", try s.new("third")])
            #expect(open.status != 0)
            #expect(open.stderr.contains("can be read or changed by others (mode 0644)") && open.stderr.contains("chmod 600"), "\(open.stderr)")
            #expect(!open.stderr.contains(RemoteJobSetup.token))
        }
    }
}
