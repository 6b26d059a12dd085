import FlowdirCore
import FlowdirTestSupport
import Testing

/// Numbers from outside (templates, configs, request files, API bodies,
/// headers) are parsed with bounds: an absurd value is an error naming it,
/// never a trap in date or timer arithmetic (issue #41).
@Suite(.tags(.small)) struct BoundedNumbersTests {
    @Test(arguments: ["99999999999999999999s", "PT99999999999999999H", "1e19s", "101000d", "P999999999W", "PT9999999999999999999999999999999S"])
    func anAbsurdDurationIsTooLongNotACrash(_ text: String) {
        #expect(FlowDuration(parsing: text) == nil, "\(text)")
        #expect(FlowDuration.parse(text) == .failure(.tooLong(text)) || FlowDuration.parse(text) == .failure(.notADuration(text)))
    }

    @Test func tooLongIsToldApartFromNotADuration() {
        #expect(FlowDuration.parse("PT99999999999999999H") == .failure(.tooLong("PT99999999999999999H")))
        #expect("\(FlowDuration.Problem.tooLong("PT99999999999999999H"))".contains("100 years"))
        #expect(FlowDuration.parse("36500d").map(\.seconds) == .success(36_500 * 86_400))
        #expect(FlowDuration.parse("36501d") == .failure(.tooLong("36501d")))
    }

    /// `Double.init` reads these too; a duration does not.
    @Test(arguments: ["nans", "infs", "infinityh", "1e3s", "0x10s", "+5s", "-0s", "1.2.3s", "PTnanS", "PTinfH", "P1e3D", "١٢s", "5 s"])
    func onlyDigitsMakeADuration(_ text: String) {
        #expect(FlowDuration(parsing: text) == nil, "\(text)")
    }

    @Test func checkedSecondsRefusesWhatNoTimerTakes() {
        for bad in [Double.nan, .infinity, -.infinity, -1, 1e19, FlowDuration.maximumSeconds + 1] {
            #expect(FlowDuration.checkedSeconds(bad) == nil, "\(bad)")
        }
        #expect(FlowDuration.checkedSeconds(0) == 0)
        #expect(FlowDuration.checkedSeconds(FlowDuration.maximumSeconds) == FlowDuration.maximumSeconds)
    }

    /// Nothing checked reaches these, but a moment out of range is still
    /// written (as the nearest it can be), never a trap.
    @Test func anyMomentIsWrittenAndReadsBack() {
        let latest = Timestamp(seconds: Timestamp.latest).iso8601, earliest = Timestamp(seconds: Timestamp.earliest).iso8601
        #expect(latest.hasSuffix("Z") && earliest.hasPrefix("-"))
        #expect(Timestamp(seconds: 1e20).iso8601 == latest)
        #expect(Timestamp(seconds: -1e20).iso8601 == earliest)
        #expect(Timestamp(seconds: .infinity).iso8601 == latest)
        #expect(Timestamp(seconds: -.infinity).iso8601 == earliest)
        #expect(Timestamp(seconds: .nan).iso8601 == "1970-01-01T00:00:00Z")
        // The latest a checked duration makes still reads back.
        let far = Timestamp(seconds: 4_102_444_800) + FlowDuration.maximumSeconds
        #expect(Timestamp(iso8601: far.iso8601)?.seconds == far.seconds)
        #expect(RelativeTime.describe(Timestamp(seconds: 1e20), now: Timestamp(seconds: 0)).hasPrefix("in "))
        #expect(RelativeTime.describe(Timestamp(seconds: .nan), now: Timestamp(seconds: 0)) == "at an unknown time")
        #expect(RelativeTime.describe(Timestamp(seconds: .infinity), now: Timestamp(seconds: 0)) == "at an unknown time")
    }

    @Test func aSnoozeBeyondAHundredYearsIsRefused() {
        let a = AwaitRecord(id: "a", node: "pick", type: .selectAsset, title: "t", createdAt: Timestamp(seconds: 0), link: "")
        for bad in [1e19, .infinity, FlowDuration.maximumSeconds * 2] {
            guard case .failure(.badSnooze(let why)) = AwaitPolicy.snooze(a, for: bad, now: Timestamp(seconds: 1_800_000_000)) else {
                Issue.record("a snooze of \(bad) s was taken")
                continue
            }
            #expect(why.contains("100 years"), "\(why)")
        }
        guard case .failure = AwaitPolicy.snooze(a, for: .nan, now: Timestamp(seconds: 0)) else {
            Issue.record("a snooze of nan s was taken")
            return
        }
        #expect((try? AwaitPolicy.snooze(a, for: 3600, now: Timestamp(seconds: 0)).get())?.snoozeUntil == Timestamp(seconds: 3600))
    }

    @Test func retryAfterIsWholeSecondsWithinADay() {
        #expect(SubmitRetry.retryAfterSeconds("45") == 45)
        #expect(SubmitRetry.retryAfterSeconds(" 86400 ") == 86_400)
        for bad in ["inf", "nan", "1e20", "-5", "+5", "86401", "99999999999999999999", "4.5", "", "0x10"] {
            #expect(SubmitRetry.retryAfterSeconds(bad) == nil, "\(bad)")
        }
        // Whatever a caller hands in, the delay is one a timer takes.
        let endpoint = EndpointConfig(name: "gpu", url: "http://gpu:1/v1", delayScale: 1000)
        for given in [Double.infinity, .nan, 1e300] {
            let d = SubmitRetry.delay(afterFailures: 1, retryAfter: given, endpoint: endpoint, jitter: 0)
            #expect(d.map { $0.isFinite && $0 <= 86_400 * 1000 } ?? true, "\(given) → \(String(describing: d))")
        }
    }
}
