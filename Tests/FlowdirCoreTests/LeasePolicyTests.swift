import FlowdirCore
import FlowdirTestSupport
import Testing

/// Leases as pure decisions: who may start nodes, and when a lease is taken or renewed.
@Suite(.tags(.small)) struct LeasePolicyTests {
    let now = Timestamp(seconds: 1_800_000_000)
    func lease(_ host: String, in seconds: Double) -> Lease { Lease(host: host, until: now + seconds) }

    @Test func anInstanceNobodySharesStartsHereUnlessACopiedFolderCarriesAnotherMachinesLiveLease() {
        #expect(Lease.mayStart(nil, shared: false, me: "laptop", at: now))
        #expect(!Lease.mayStart(lease("gpu", in: 60), shared: false, me: "laptop", at: now))
        #expect(Lease.mayStart(lease("gpu", in: -1), shared: false, me: "laptop", at: now), "lapsed: anyone may")
        #expect(Lease.mayStart(lease("laptop", in: 60), shared: false, me: "laptop", at: now))
    }

    @Test func aSharedInstanceStartsOnlyWhereItsLiveLeaseIs() {
        #expect(!Lease.mayStart(nil, shared: true, me: "laptop", at: now), "taken only by pushing it")
        #expect(Lease.mayStart(lease("laptop", in: 60), shared: true, me: "laptop", at: now))
        #expect(!Lease.mayStart(lease("laptop", in: 0), shared: true, me: "laptop", at: now), "its own, lapsed")
        #expect(!Lease.mayStart(lease("gpu", in: 60), shared: true, me: "laptop", at: now))
        #expect(!Lease.mayStart(lease("gpu", in: -1), shared: true, me: "laptop", at: now))
    }

    @Test func aLeaseIsTakenWhereNobodySharesAndRenewedPastHalfItsTime() {
        let taken = Lease.renewal(nil, shared: false, me: "laptop", at: now, duration: 600)
        #expect(taken == lease("laptop", in: 600))
        #expect(Lease.renewal(lease("laptop", in: 301), shared: false, me: "laptop", at: now, duration: 600) == nil, "more than half left")
        #expect(Lease.renewal(lease("laptop", in: 300), shared: true, me: "laptop", at: now, duration: 600) == lease("laptop", in: 600))
        #expect(Lease.renewal(lease("gpu", in: -5), shared: false, me: "laptop", at: now, duration: 600) == lease("laptop", in: 600),
                "a lapsed lease of a folder nobody shares is taken over")
    }

    @Test func nothingIsWrittenWhereAnotherMachineHoldsItOrASharedOneWasNeverPushedHere() {
        #expect(Lease.renewal(lease("gpu", in: 60), shared: false, me: "laptop", at: now, duration: 600) == nil)
        #expect(Lease.renewal(lease("gpu", in: 60), shared: true, me: "laptop", at: now, duration: 600) == nil)
        #expect(Lease.renewal(nil, shared: true, me: "laptop", at: now, duration: 600) == nil)
        #expect(Lease.renewal(lease("gpu", in: -1), shared: true, me: "laptop", at: now, duration: 600) == nil,
                "a shared one is taken by pushing, even when lapsed")
    }
}
