package main

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/onnxrl/sampler/inference"
)

// runtimePins are the pinned ONNX Runtime build: the npm registry's onnxruntime-node package
// (the official Linux builds are inside it) and the sha256 digests of its tarball and of the
// library for each architecture (npm's names). scripts/install-onnxruntime.sh pins the same.
type runtimePins struct {
	version, url, tarballSHA256 string
	libSHA256                   map[string]string // arch -> digest
}

var pinnedRuntime = runtimePins{
	version:       inference.PinnedVersion,
	url:           "https://registry.npmjs.org/onnxruntime-node/-/onnxruntime-node-" + inference.PinnedVersion + ".tgz",
	tarballSHA256: "57181cf6e6e711b155c5b942d591fd63ded0b5de5c4922d51fd994e7f6ac2772",
	libSHA256: map[string]string{
		"x64":   "53ef1ac028dd1b05554b8da28d9159eb3876f99868193d2aaa6e67f0243c23d4",
		"arm64": "7954e8bdedb497f830c6a679e818d98399b7f4d81ade1126c3e0be74d28111ab",
	},
}

// npmArch is the npm package's name for this machine's architecture.
func npmArch() (string, error) {
	if runtime.GOOS != "linux" {
		return "", fmt.Errorf("no pinned ONNX Runtime build for %s; install ONNX Runtime %s yourself and set %s",
			runtime.GOOS, inference.PinnedVersion, inference.LibraryEnv)
	}
	switch runtime.GOARCH {
	case "amd64":
		return "x64", nil
	case "arm64":
		return "arm64", nil
	}
	return "", fmt.Errorf("no pinned ONNX Runtime build for linux/%s; install ONNX Runtime %s yourself and set %s",
		runtime.GOARCH, inference.PinnedVersion, inference.LibraryEnv)
}

const runtimeArgs = "install [--from TARBALL] [--dir DIR] [--force] | path"

func runRuntime(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("want a subcommand: sample runtime %s", runtimeArgs)
	}
	switch args[0] {
	case "install":
		return runRuntimeInstall(args[1:], stdout, stderr)
	case "path":
		fs := newFlags("runtime path", "", stdout)
		if _, err := parseFlags(fs, args[1:]); err != nil {
			return err
		}
		dir, err := inference.UserLibraryDir()
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, filepath.Join(dir, "libonnxruntime.so.1"))
		return nil
	case "-h", "--help", "help":
		fmt.Fprintf(stdout, "usage: sample runtime %s\n", runtimeArgs)
		return nil
	}
	return usagef("unknown subcommand %q%s; want: sample runtime %s", args[0], didYouMean(args[0], []string{"install", "path"}), runtimeArgs)
}

func runRuntimeInstall(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("runtime install", "[--from TARBALL] [--dir DIR] [--force]", stdout)
	from := fs.String("from", "", "install from this onnxruntime-node-"+inference.PinnedVersion+".tgz instead of downloading it from the npm registry")
	dir := fs.String("dir", "", "install into this folder (default: the user cache, see 'sample runtime path')")
	force := fs.Bool("force", false, "install again even when the folder already holds the pinned library")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	dest := *dir
	if dest == "" {
		var err error
		if dest, err = inference.UserLibraryDir(); err != nil {
			return err
		}
	}
	arch, err := npmArch()
	if err != nil {
		return err
	}
	if lib, ok := installedRuntime(pinnedRuntime, arch, dest); ok && !*force {
		fmt.Fprintf(stderr, "sample runtime: ONNX Runtime %s (linux/%s) is already installed, sha256 checked; --force installs it again\n",
			pinnedRuntime.version, arch)
		fmt.Fprintln(stdout, lib)
		return nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var src io.Reader
	if *from != "" {
		fh, err := os.Open(*from)
		if err != nil {
			return err
		}
		defer fh.Close()
		src = fh
	} else {
		fmt.Fprintf(stderr, "sample runtime: downloading %s\n", pinnedRuntime.url)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, pinnedRuntime.url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("downloading ONNX Runtime: %w (offline? download %s elsewhere and pass it with --from)", err, pinnedRuntime.url)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("downloading %s: %s", pinnedRuntime.url, resp.Status)
		}
		src = resp.Body
	}
	lib, err := installRuntime(src, pinnedRuntime, arch, dest)
	if err != nil {
		if ctx.Err() != nil {
			return errInterrupted
		}
		return err
	}
	fmt.Fprintf(stderr, "sample runtime: installed ONNX Runtime %s (linux/%s), sha256 checked\n", pinnedRuntime.version, arch)
	fmt.Fprintln(stdout, lib)
	return nil
}

// installedRuntime returns dest's library and true when it is there with the pinned digest
// for arch (a present install is kept: nothing is downloaded again).
func installedRuntime(pins runtimePins, arch, dest string) (string, bool) {
	lib := filepath.Join(dest, "libonnxruntime.so.1")
	fh, err := os.Open(lib)
	if err != nil {
		return "", false
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return "", false
	}
	want, ok := pins.libSHA256[arch]
	return lib, ok && hex.EncodeToString(h.Sum(nil)) == want
}

// installRuntime reads the package tarball from src, extracts the library for arch into
// dest (as libonnxruntime.so.1, with a libonnxruntime.so link), and checks both digests
// against pins before anything is put in place. It returns the library's path.
func installRuntime(src io.Reader, pins runtimePins, arch, dest string) (string, error) {
	want, ok := pins.libSHA256[arch]
	if !ok {
		return "", fmt.Errorf("no pinned ONNX Runtime build for linux/%s", arch)
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return "", err
	}
	tarHash := sha256.New()
	zr, err := gzip.NewReader(io.TeeReader(src, tarHash))
	if err != nil {
		return "", fmt.Errorf("onnxruntime-node package: %w", err)
	}
	member := "package/bin/napi-v6/linux/" + arch + "/libonnxruntime.so.1"
	tmp, err := os.CreateTemp(dest, ".libonnxruntime-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	defer tmp.Close()
	libHash := sha256.New()
	found, err := extractMember(tar.NewReader(zr), member, io.MultiWriter(tmp, libHash))
	if err != nil {
		return "", err
	}
	// The rest of the stream (gzip trailer, padding) counts for the tarball's digest.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return "", fmt.Errorf("onnxruntime-node package: %w", err)
	}
	if _, err := io.Copy(tarHash, src); err != nil {
		return "", err
	}
	if got := hex.EncodeToString(tarHash.Sum(nil)); got != pins.tarballSHA256 {
		return "", fmt.Errorf("onnxruntime-node@%s tarball: sha256 %s, want %s; nothing installed", pins.version, got, pins.tarballSHA256)
	}
	if !found {
		return "", fmt.Errorf("onnxruntime-node@%s has no %s; nothing installed", pins.version, member)
	}
	if got := hex.EncodeToString(libHash.Sum(nil)); got != want {
		return "", fmt.Errorf("%s: sha256 %s, want %s; nothing installed", member, got, want)
	}
	return placeRuntime(tmp, dest, pins.version)
}

// extractMember copies the regular file member of tr to w and reports whether it was
// there; it reads tr to its end.
func extractMember(tr *tar.Reader, member string, w io.Writer) (found bool, err error) {
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return found, nil
		}
		if err != nil {
			return found, fmt.Errorf("onnxruntime-node package: %w", err)
		}
		if h.Name != member || h.Typeflag != tar.TypeReg {
			continue
		}
		if _, err := io.Copy(w, tr); err != nil {
			return found, fmt.Errorf("onnxruntime-node package: %s: %w", member, err)
		}
		found = true
	}
}

// placeRuntime puts the checked library tmp into dest as libonnxruntime.so.1, with a
// libonnxruntime.so link and a VERSION file, and returns its path.
func placeRuntime(tmp *os.File, dest, version string) (string, error) {
	if err := tmp.Chmod(0o644); err != nil {
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	lib := filepath.Join(dest, "libonnxruntime.so.1")
	if err := os.Rename(tmp.Name(), lib); err != nil {
		return "", err
	}
	link := filepath.Join(dest, "libonnxruntime.so")
	os.Remove(link)
	if err := os.Symlink("libonnxruntime.so.1", link); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dest, "VERSION"), []byte(version+"\n"), 0o644); err != nil {
		return "", err
	}
	return lib, nil
}
