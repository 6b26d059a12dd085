import FlowdirCore
import FlowdirTestSupport
import Testing

@Suite(.tags(.small)) struct RemotePolicyTests {
    let gpu = EndpointConfig(name: "gpu", url: "http://gpu:8700/v1")

    @Test func submitRetriesWaitAbout30sThen2minAtMostThreeTimes() {
        #expect(SubmitRetry.delay(afterFailures: 1, retryAfter: nil, endpoint: gpu, jitter: 0) == 30)
        #expect(SubmitRetry.delay(afterFailures: 2, retryAfter: nil, endpoint: gpu, jitter: 0) == 120)
        #expect(SubmitRetry.delay(afterFailures: 3, retryAfter: nil, endpoint: gpu, jitter: 0) == 120)
        #expect(SubmitRetry.delay(afterFailures: 4, retryAfter: nil, endpoint: gpu, jitter: 0) == nil)
        #expect(SubmitRetry.delay(afterFailures: 0, retryAfter: nil, endpoint: gpu, jitter: 0) == nil)
    }

    /// `Prefer` as RFC 7240 writes it: the wait a create asks for, at most
    /// the server's longest; a value that is not whole seconds asks nothing.
    @Test func preferWaitIsReadAsRFC7240WritesIt() {
        #expect(PreferWait.seconds(["wait"]) == 60)
        #expect(PreferWait.seconds(["wait=5"]) == 5)
        #expect(PreferWait.seconds(["Wait = 5"]) == 5)
        #expect(PreferWait.seconds(["respond-async, wait=10"]) == 10)
        #expect(PreferWait.seconds(["respond-async", "wait=\"7\"; x=y"]) == 7)
        #expect(PreferWait.seconds(["wait=600"]) == 60)
        #expect(PreferWait.seconds(["wait"], longest: 2) == 2)
        for refused in ["wait=0", "wait=-3", "wait=1e3", "wait=", "wait=soon", "wait=99999999", "respond-async", "waiting=5"] {
            #expect(PreferWait.seconds([refused]) == nil, "\(refused)")
        }
        #expect(PreferWait.seconds([]) == nil)
        #expect(PreferWait.header(seconds: 25) == "wait=25" && PreferWait.header(seconds: 90) == "wait=60" && PreferWait.header(seconds: 0) == nil)
    }

    @Test func jitterStaysWithinAQuarter() {
        #expect(SubmitRetry.delay(afterFailures: 1, retryAfter: nil, endpoint: gpu, jitter: 1) == 37.5)
        #expect(SubmitRetry.delay(afterFailures: 1, retryAfter: nil, endpoint: gpu, jitter: -1) == 22.5)
        #expect(SubmitRetry.delay(afterFailures: 1, retryAfter: nil, endpoint: gpu, jitter: 7) == 37.5)
    }

    /// With the random jitter the executor uses: every delay within ±25%, and spread across it.
    @Test func jitterIsPresentAndWithinAQuarter() {
        let delays = (0..<2000).map { _ in SubmitRetry.delay(afterFailures: 1, retryAfter: nil, endpoint: gpu, jitter: Double.random(in: -1...1))! }
        #expect(delays.allSatisfy { $0 >= 22.5 && $0 <= 37.5 })
        #expect(delays.min()! < 24 && delays.max()! > 36)
        #expect(Set(delays.map { Int($0) }).count >= 14)
        var backoff = Backoff()
        let waits = (0..<200).map { _ -> Double in
            backoff.succeeded()
            return backoff.failed(jitter: Double.random(in: -1...1))
        }
        #expect(waits.allSatisfy { $0 >= 0.75 && $0 <= 1.25 } && Set(waits).count > 100)
    }

    @Test func retryAfterWinsAndIsScaled() {
        #expect(SubmitRetry.delay(afterFailures: 1, retryAfter: 45, endpoint: gpu, jitter: 1) == 45)
        var fast = gpu
        fast.delayScale = 0.01
        #expect(SubmitRetry.delay(afterFailures: 1, retryAfter: 45, endpoint: fast, jitter: 0) == 0.45)
        // Past the last try, even a Retry-After does not bring another.
        #expect(SubmitRetry.delay(afterFailures: 4, retryAfter: 1, endpoint: fast, jitter: 0) == nil)
    }

    @Test func backoffDoublesUpToFiveMinutesAndResets() {
        var b = Backoff()
        let waits = (0..<12).map { _ in b.failed(jitter: 0) }
        #expect(waits.prefix(6) == [1, 2, 4, 8, 16, 32])
        #expect(waits.last == 300)
        #expect(b.isFailing)
        b.succeeded()
        #expect(!b.isFailing)
        #expect(b.failed(jitter: 0) == 1)
        var j = Backoff()
        #expect(j.failed(jitter: 1) == 1.25)
        #expect(j.failed(jitter: -1) == 1.5)
    }

    @Test func budgetHoldsRequestsToTheRatePerMinute() {
        var budget = RequestBudget(perMinute: 3)
        var now = 1000.0
        for _ in 0..<3 {
            #expect(budget.wait(now: now) == 0)
            budget.spend(now: now)
            now += 1
        }
        // Three sent at 1000, 1001, 1002: the fourth may go at 1060.
        #expect(abs(budget.wait(now: now) - 57) < 0.01)
        #expect(budget.wait(now: 1060) == 0)
        #expect(budget.spentInLastMinute(now: 1003) == 3)
        #expect(budget.spentInLastMinute(now: 1061) == 1)
    }

    @Test func budgetOverManyMinutesNeverExceedsTheRate() {
        var budget = RequestBudget(perMinute: 600)
        var now = 0.0
        var sentTimes: [Double] = []
        while now < 600 {
            let w = budget.wait(now: now)
            now += w
            budget.spend(now: now)
            sentTimes.append(now)
            now += 0.01
        }
        // Any 60-second window holds at most 600.
        var lo = 0
        for hi in sentTimes.indices {
            while sentTimes[hi] - sentTimes[lo] >= 60 { lo += 1 }
            #expect(hi - lo + 1 <= 600)
        }
        #expect(sentTimes.count >= 5900)
    }

    @Test func manyDueJobsShareOneListCall() {
        #expect(PollPlan.requests(due: ["a"], tracked: 1) == [.get("a")])
        #expect(PollPlan.requests(due: ["a", "b"], tracked: 2) == [.list(["a", "b"])])
        let many = (0..<1000).map { "p\($0)" }
        #expect(PollPlan.requests(due: many, tracked: 1000) == [.list(Set(many))])
        // Two due among thousands tracked: two gets beat walking 10 pages.
        #expect(PollPlan.requests(due: ["a", "b"], tracked: 1000) == [.get("a"), .get("b")])
    }

    @Test func tokenVariableNamesTheEndpoint() {
        #expect(EndpointConfig(name: "gpu-box.2", url: "").tokenVariable == "FLOWDIR_TOKEN_GPU_BOX_2")
    }
}
