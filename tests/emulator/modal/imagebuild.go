package modal

import (
	"context"
	"fmt"
	"sync"
)

// When sandboxes run, an image's build is what it is on Modal: its RUN steps
// installed (materialise, image.go), and the build ends when they are. Upstream
// builds its sandbox image while it deploys (`deploy.py --build-sandbox-image`)
// so that the first session does not wait for it: a session's createSandbox
// has 60 s, and a cold install of upstream's image takes longer. A step that
// fails fails the build, as a failed RUN step fails Modal's. Without sandboxes
// nothing is installed and a build takes Options.ImageBuildTime.

// imageBuild is one image's installs, running or ended.
type imageBuild struct {
	done chan struct{} // closed when err is set
	err  error
}

// imageBuilds are the builds started by this process, by image ID. A build
// of an image recorded as building by an earlier process starts again at
// its next join; the cache makes that cheap when the tree was finished.
type imageBuilds struct {
	mu   sync.Mutex
	byID map[string]*imageBuild

	// ctx ends with the Service (Close), killing the installs' processes.
	ctx  context.Context
	stop context.CancelFunc
}

func newImageBuilds() imageBuilds {
	ctx, stop := context.WithCancel(context.Background())
	return imageBuilds{byID: map[string]*imageBuild{}, ctx: ctx, stop: stop}
}

// startBuild starts installing img's RUN steps, once, and returns the build,
// or nil when there is nothing to install (no sandboxes run, the build fails
// by an injected fault, or no step runs). The caller holds m.mu.
func (m *Service) startBuild(img *modalImage) *imageBuild {
	if !m.sandboxRuntime.enabled() || img.FailBuild {
		return nil
	}
	b := &m.builds
	b.mu.Lock()
	defer b.mu.Unlock()
	if build, ok := b.byID[img.ID]; ok {
		return build
	}
	runs := m.layoutOf(img.ID).runs
	if len(runs) == 0 {
		b.byID[img.ID] = nil
		return nil
	}
	build := &imageBuild{done: make(chan struct{})}
	b.byID[img.ID] = build
	go func() {
		defer close(build.done)
		python, _, err := m.sandboxRuntime.python()
		if err == nil {
			_, err = m.materialise(b.ctx, python, runs)
		}
		if err != nil {
			build.err = fmt.Errorf("image %s: %w", img.ID, err)
			m.logfSafe("modal: building %s failed: %v", img.ID, build.err)
		}
	}()
	return build
}

// installs reports img's installs, starting them if need be: pending is
// closed when they end and nil once they have (or when none run), err is
// how they failed. The caller holds m.mu.
func (m *Service) installs(img *modalImage) (pending <-chan struct{}, err error) {
	build := m.startBuild(img)
	if build == nil {
		return nil, nil
	}
	select {
	case <-build.done:
		return nil, build.err
	default:
		return build.done, nil
	}
}
