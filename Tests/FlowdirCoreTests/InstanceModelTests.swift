import FlowdirCore
import Testing

@Suite struct InstanceModelTests {
    @Test func timestampsRoundTripAsISO8601() {
        let cases: [(String, Double)] = [
            ("1970-01-01T00:00:00Z", 0), ("2026-11-22T10:00:00Z", 1_795_341_600),
            ("2000-02-29T23:59:59Z", 951_868_799), ("1969-12-31T23:59:59Z", -1),
        ]
        for (text, seconds) in cases {
            #expect(Timestamp(iso8601: text)?.seconds == seconds, "\(text)")
            #expect(Timestamp(seconds: seconds).iso8601 == text)
        }
        #expect(Timestamp(iso8601: "2026-11-22T12:00:00+02:00")?.iso8601 == "2026-11-22T10:00:00Z")
        #expect(Timestamp(iso8601: "2026-11-22T10:00:00.250Z")?.seconds == 1_795_341_600.25)
        #expect(Timestamp(iso8601: "2026-11-22")?.iso8601 == "2026-11-22T00:00:00Z")
        for bad in ["", "2026-13-01", "2026-11-22T10:00:00", "yesterday", "2026-11-22T25:00:00Z"] {
            #expect(Timestamp(iso8601: bad) == nil, "\(bad)")
        }
    }

    @Test func relativeTimeReadsLikeAList() {
        let now = Timestamp(seconds: 10_000)
        #expect(RelativeTime.describe(Timestamp(seconds: 9_995), now: now) == "just now")
        #expect(RelativeTime.describe(Timestamp(seconds: 9_700), now: now) == "5m ago")
        #expect(RelativeTime.describe(Timestamp(seconds: 13_600), now: now) == "in 1h")
    }

    @Test func commitMessagesCarryTrailersBothWays() {
        let m = CommitMessage(summary: "mask1 answered; stylize1 → queuedRemote", event: "answer", transitions: [
            Transition(node: "mask1", from: "awaitingUser", to: "succeeded", run: 1),
            Transition(node: "stylize1", from: "ready", to: "queuedRemote", run: 1),
        ])
        #expect(m.text == """
            mask1 answered; stylize1 → queuedRemote

            Flowdir-Event: answer
            Flowdir-Transition: mask1 awaitingUser→succeeded run=1
            Flowdir-Transition: stylize1 ready→queuedRemote run=1

            """)
        #expect(CommitMessage(parsing: m.text) == m)
        #expect(CommitMessage(parsing: "a person's own commit\n\nno trailers\n") == nil)
        #expect(Transition(trailer: "load1 →ready run=0") == Transition(node: "load1", from: nil, to: "ready", run: 0))
    }

    @Test func blockReasonsReadBackFromTheirWords() {
        let reasons: [BlockReason] = [.waitingFor(port: "image", node: "load1"), .upstreamFailed(node: "a"),
                                      .upstreamSkipped(node: "é-1"), .inputChanged(node: "b"), .paramsChanged, .paramsConflict,
                                      .toolNotInstalled(kind: "Stylize"), .offline, .other("Something else")]
        for r in reasons { #expect(BlockReason(text: r.text) == r) }
        #expect(BlockReason.inputChanged(node: "load1").text == "Input from 'load1' has changed")
    }

    /// Words that only look like a reason (a person's edit, say) are kept
    /// as written, never read as a case whose words would differ.
    @Test func nearMissWordsAreKeptAsTheyAre() {
        for text in ["Waiting for 'a' from 'b' soon", "Waiting for 'a' or 'b'", "Waiting for '' from 'b'",
                     "Upstream failed: 'a' and 'b'", "Upstream failed: ''", "Input from 'a' has changed!",
                     "Tool not installed: ", "params changed", "Waiting for 'a",
                     "Waiting for 'a' from 'b' from 'c'", "Waiting for 'a'' from 'b'", "Waiting for ' from 'b'"] {
            #expect(BlockReason(text: text) == .other(text))
            #expect(BlockReason(text: text).text == text)
        }
    }

    @Test func summariesAndSlugs() {
        let fail = NodeError(summary: "x", code: "exit1")
        #expect(InstanceSummary(states: [.succeeded, .skipped]).status == .done)
        #expect(InstanceSummary(states: [.succeeded, .failed(fail)]).status == .failed)
        #expect(InstanceSummary(states: [.succeeded, .runningLocal, .awaitingUser]).status == .running)
        #expect(InstanceSummary(states: [.succeeded, .awaitingUser, .blocked(.paramsChanged)]).status == .waiting)
        #expect(InstanceSummary(states: [.ready, .blocked(.paramsChanged)]).status == .ready)
        #expect(InstanceSummary(states: [.blocked(.offline)]).status == .blocked)
        #expect(InstanceSummary(states: [.succeeded, .ready, .skipped]).steps == "2/3")
        #expect(Slug.make("My Photo #2 (final)") == "my-photo-2-final")
        #expect(Slug.make("ÆØÅ") == "workflow")
    }
}
