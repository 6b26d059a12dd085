#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO

/// Makes a small PNG of an image (for list rows and output tiles).
public protocol Thumbnailer: Sendable {
    /// Writes a PNG at most `side` pixels wide and high of the image at
    /// `source`, whose bytes were checked to be `format` (PNG, JPEG or
    /// WebP), to `destination`; throws what went wrong.
    func thumbnail(of source: String, format: ContentFormat, to destination: String, side: Int) async throws(UIError)
}

/// ImageMagick's `convert`, which the example tools use too: told which
/// decoder to use (`png:file`), never left to guess from the bytes or the
/// name (an SVG or MVG would read other files, a delegate would run a program).
public struct ImageMagickThumbnailer: Thumbnailer {
    public init() {}

    public func thumbnail(of source: String, format: ContentFormat, to destination: String, side: Int) async throws(UIError) {
        guard let decoder = Self.decoder(format) else { throw UIError(415, "no thumbnail of a \(format.rawValue) file") }
        // Bounds on what one picture may take (a small file can claim a huge canvas).
        let limits = ["-limit", "width", "16KP", "-limit", "height", "16KP", "-limit", "area", "128MP", "-limit", "memory", "256MiB",
                      "-limit", "disk", "1GiB", "-limit", "time", "60"]
        // `[0]`: the first frame.
        let r = await CommandOutput.run(["convert"] + limits + [decoder + ":" + source + "[0]", "-auto-orient", "-thumbnail", "\(side)x\(side)>",
                                                                "png:" + destination])
        guard r.status == 0 else {
            if r.status == 127 { throw UIError(501, "no thumbnail: ImageMagick's convert is not installed", hint: "apt install imagemagick") }
            throw UIError(415, "no thumbnail: ImageMagick could not read it as \(format.rawValue.uppercased())")
        }
    }

    static func decoder(_ format: ContentFormat) -> String? {
        switch format {
        case .png: "png"
        case .jpeg: "jpeg"
        case .webp: "webp"
        default: nil
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
        // By content, before anything reads it as an image: PNG, JPEG or WebP, whole.
        let format: ContentFormat
        do {
            format = try ContentCheck.check(try FileByteSource(path: path), as: .image)
        } catch let e as ContentCheck.Failure {
            throw UIError(415, "no thumbnail: \(e.reason)")
        } catch {
            throw UIError(404, "cannot read the file")
        }
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
        do { try Files.makeDirectories(folder) } catch {
            throw UIError(500, "cannot make \(folder) for thumbnails", hint: "check that the instance's folder is writable")
        }
        let partial = folder + "/." + blob!.hex + "." + RandomID.uuid() + ".png"
        do {
            try await maker.thumbnail(of: path, format: format, to: partial, side: Self.side)
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
