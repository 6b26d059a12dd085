#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO

/// Makes a small PNG of an image (for list rows and output tiles).
public protocol Thumbnailer: Sendable {
    /// Writes a PNG at most `side` pixels wide and high of the image at
    /// `source` to `destination`; throws what went wrong.
    func thumbnail(of source: String, to destination: String, side: Int) async throws(UIError)
}

/// ImageMagick's `convert`, which the example tools use too.
public struct ImageMagickThumbnailer: Thumbnailer {
    public init() {}

    public func thumbnail(of source: String, to destination: String, side: Int) async throws(UIError) {
        // `[0]`: a GIF's or a TIFF's first frame.
        let r = await CommandOutput.run(["convert", source + "[0]", "-auto-orient", "-thumbnail", "\(side)x\(side)>", "png:" + destination])
        guard r.status == 0 else {
            throw UIError(r.status == 127 ? 501 : 415, "no thumbnail: \(r.output.split(separator: "\n").first ?? "convert exited \(r.status)")",
                          hint: r.status == 127 ? "install ImageMagick (apt install imagemagick)" : nil)
        }
    }
}

/// Thumbnails made once per blob and kept in the instance's
/// `.flowdir/thumbs/` (never committed): the same bytes under another
/// name, or in a later run, are not made again.
public struct ThumbnailCache: Sendable {
    public static let side = 320
    let maker: any Thumbnailer
    /// The blob of a file as last read (by path, size and mtime): a list of
    /// a thousand rows does not hash a thousand images each time.
    let blobs = Locked([String: (stamp: FileStamp, blob: ObjectID)]())

    public init(maker: any Thumbnailer = ImageMagickThumbnailer()) {
        self.maker = maker
    }

    /// The thumbnail's path for the file at `path` (made now if new).
    public func thumbnail(instance: String, path: String) async throws(UIError) -> String {
        guard let stamp = FileStamp.of(path) else { throw UIError(404, "no such file") }
        var blob = blobs.locked { $0[path] }.flatMap { $0.stamp == stamp ? $0.blob : nil }
        if blob == nil {
            guard let bytes = try? LocalFileSystem().readFile(path, limit: 1 << 30) else { throw UIError(404, "cannot read the file") }
            let id = GitRepository.blobID(of: bytes)
            blobs.locked { $0[path] = (stamp, id) }
            blob = id
        }
        let folder = instance + "/" + InstancePaths.local + "/thumbs"
        let thumb = folder + "/" + blob!.hex + ".png"
        if Files.exists(thumb) { return thumb }
        do { try Files.makeDirectories(folder) } catch { throw UIError(500, "cannot make \(folder): \(error)") }
        let partial = folder + "/." + blob!.hex + "." + RandomID.uuid() + ".png"
        do {
            try await maker.thumbnail(of: path, to: partial, side: Self.side)
        } catch {
            unlink(partial)
            throw error
        }
        guard rename(partial, thumb) == 0 else {
            unlink(partial)
            throw UIError(500, "cannot keep the thumbnail in \(folder)")
        }
        return thumb
    }
}
