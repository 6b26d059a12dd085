@testable import FlowdirCore
import FlowdirTestSupport
import Testing

@Suite(.tags(.small)) struct InstanceModelTests {
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

    /// Written as bytes, a timestamp reads as the text formula says, far
    /// from now too: years of fewer than four digits padded, of more and
    /// before year 0 as they are.
    @Test func timestampsAreWrittenAsTheirFormulaSays() {
        func formula(_ t: Timestamp) -> String {
            let total = Int64(t.seconds.rounded(.down))
            let days = total >= 0 ? total / 86_400 : (total - 86_399) / 86_400
            let secs = total - days * 86_400
            let (y, m, d) = Timestamp.civil(fromDays: days)
            func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
            let year = y < 0 ? "-" + String(-y) : String(repeating: "0", count: max(0, 4 - String(y).count)) + String(y)
            return "\(year)-\(two(m))-\(two(d))T\(two(secs / 3600)):\(two(secs % 3600 / 60)):\(two(secs % 60))Z"
        }
        var rng = SplitMix(seed: 3)
        let edges: [Double] = [0, -1, 59.999, -62_135_596_800, -62_135_596_801, -62_167_219_200, -62_167_219_201, 253_402_300_799, 253_402_300_800, -61_851_600_000]
        for seconds in edges + (0..<3_000).map({ _ in Double(Int64(bitPattern: rng.next()) % 800_000_000_000) / 2 }) {
            let t = Timestamp(seconds: seconds)
            #expect(t.iso8601 == formula(t), "\(seconds)")
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
        // With a body, and a node's first move (no state before it).
        let first = Transition(node: "load1", from: nil, to: "ready", run: 0)
        let withBody = CommitMessage(summary: "Recover", event: "recover", transitions: [first, m.transitions[0]], body: "why\nand how")
        #expect(withBody.text == "Recover\n\nwhy\nand how\n\nFlowdir-Event: recover\n"
            + "Flowdir-Transition: \(first)\nFlowdir-Transition: \(m.transitions[0])\n")
        #expect(CommitMessage(parsing: withBody.text) == withBody)
    }

    @Test func blockReasonsReadBackFromTheirWords() {
        let reasons: [BlockReason] = [.waitingFor(port: "image", node: "load1"), .upstreamFailed(node: "a"),
                                      .upstreamSkipped(node: "é-1"), .inputChanged(node: "b"), .paramsChanged, .paramsConflict,
                                      .toolNotInstalled(kind: "Stylize"), .offline(endpoint: "gpu", since: Timestamp(seconds: 1_800_000_000)), .inputNotHere(detail: "origin unreachable"), .other("Something else")]
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
        #expect(InstanceSummary(states: [.blocked(.offline(endpoint: "gpu", since: Timestamp(seconds: 1_800_000_000)))]).status == .blocked)
        #expect(InstanceSummary(states: [.succeeded, .ready, .skipped]).steps == "2/3")
        #expect(Slug.make("My Photo #2 (final)") == "my-photo-2-final")
        #expect(Slug.make("ÆØÅ") == "workflow")
    }
}
