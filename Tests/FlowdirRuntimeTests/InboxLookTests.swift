import FlowdirCore
@testable import FlowdirRuntime
import FlowdirTestSupport
import Testing

/// An instance's inbox between looks, on a manual clock: when a dropped
/// file counts as complete, and when the engine looks again.
@Suite(.tags(.small)) struct InboxLookTests {
    @Test func theFirstLookTakesEverythingLaterOnesWaitForQuietOrWord() {
        var look = InboxLook()
        #expect(look.isSettled("mask1.mask.png", quietFor: 0), "files found on opening are taken as they are")
        look.first = false
        #expect(!look.isSettled("mask1.mask.png", quietFor: 0.49), "maybe mid-copy")
        #expect(look.isSettled("mask1.mask.png", quietFor: InboxLook.quiet))
        look.completed.insert("mask1.mask.png")
        #expect(look.isSettled("mask1.mask.png", quietFor: 0), "the watcher saw it closed after writing")
        look.forget("mask1.mask.png")
        #expect(!look.isSettled("mask1.mask.png", quietFor: 0), "a file answered or refused: the next one by that name starts again")
    }

    @Test func theNextLookIsJustAfterTheFirstUnsettledFileTurnsQuiet() throws {
        let clock = ManualClock()
        var look = InboxLook()
        look.recheck(unsettledQuietFor: [0.1, 0.4], now: clock.now)
        // The file quiet for 0.4 s settles 0.1 s from now; that look sets the next.
        let next = try #require(look.recheck)
        #expect(next > clock.now + .milliseconds(99) && next <= clock.now + .milliseconds(110))
        look.recheck(unsettledQuietFor: [], now: clock.now)
        #expect(look.recheck == nil, "nothing unsettled: nothing to look at until an event")
    }

    @Test func aCheckIsForgottenWithItsFile() {
        var look = InboxLook()
        look.checks["a.mask.png"] = ("s1", .success(.png))
        look.completed.insert("a.mask.png")
        look.forget("a.mask.png")
        #expect(look.checks["a.mask.png"] == nil && look.completed.isEmpty)
    }
}
