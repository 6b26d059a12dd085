import FlowdirCore
import FlowdirTestSupport
import Testing

/// What a `Range` header asks of a file (RFC 9110 §14), as `flowdir serve`
/// answers it: one range, `206`; past the end, `416`; anything else, the
/// whole file.
@Suite(.tags(.small)) struct ByteRangeTests {
    @Test func oneRangeInEachOfItsThreeForms() {
        #expect(ByteRange.of("bytes=0-99", size: 1000) == .part(first: 0, last: 99))
        #expect(ByteRange.of("bytes=500-", size: 1000) == .part(first: 500, last: 999))
        #expect(ByteRange.of("bytes=-100", size: 1000) == .part(first: 900, last: 999))
        #expect(ByteRange.of("bytes=999-999", size: 1000) == .part(first: 999, last: 999))
        // The unit is case-insensitive; spaces around the range are allowed.
        #expect(ByteRange.of("Bytes= 10-19 ", size: 1000) == .part(first: 10, last: 19))
    }

    @Test func aRangePastTheEndIsCutToTheFile() {
        #expect(ByteRange.of("bytes=900-5000", size: 1000) == .part(first: 900, last: 999))
        #expect(ByteRange.of("bytes=-5000", size: 1000) == .part(first: 0, last: 999))
        #expect(ByteRange.of("bytes=0-99999999999999999999999", size: 1000) == .part(first: 0, last: 999))
    }

    @Test func whatCannotBeSatisfiedIs416() {
        #expect(ByteRange.of("bytes=1000-", size: 1000) == .unsatisfiable)
        #expect(ByteRange.of("bytes=1000-2000", size: 1000) == .unsatisfiable)
        #expect(ByteRange.of("bytes=99999999999999999999999-", size: 1000) == .unsatisfiable)
        #expect(ByteRange.of("bytes=-0", size: 1000) == .unsatisfiable)
        #expect(ByteRange.of("bytes=0-", size: 0) == .unsatisfiable)
        #expect(ByteRange.of("bytes=-10", size: 0) == .unsatisfiable)
    }

    @Test func anythingElseIsTheWholeFile() {
        for header in [nil, "", "bytes=", "bytes=-", "bytes=5-2", "items=0-5", "bytes=0-1,5-6", "bytes=a-b", "bytes=+1-2", "bytes=1--2",
                       "bytes=0x10-20", "bytes 0-5", "bytes=-+5"] {
            #expect(ByteRange.of(header, size: 1000) == .whole, "\(header ?? "nil")")
        }
    }
}
