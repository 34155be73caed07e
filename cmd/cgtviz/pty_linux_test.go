package main

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal pair sized cols x rows: the master end
// the test reads the screen from and types into, and the terminal end the
// program runs on. Linux's /dev/ptmx is enough; no tmux, no cgo.
func openPTY(cols, rows uint16) (master, tty *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	// Control, not Fd: Fd would switch the file to blocking mode, and a
	// blocked Read would then outlive Close.
	var n uint32
	var ioErr error
	err = withFD(master, func(fd int) {
		if ioErr = unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); ioErr != nil {
			ioErr = fmt.Errorf("unlockpt: %w", ioErr)
			return
		}
		if n, ioErr = unix.IoctlGetUint32(fd, unix.TIOCGPTN); ioErr != nil {
			ioErr = fmt.Errorf("ptsname: %w", ioErr)
		}
	})
	if err == nil {
		err = ioErr
	}
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	err = withFD(tty, func(fd int) {
		ioErr = unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows})
	})
	if err == nil {
		err = ioErr
	}
	if err != nil {
		master.Close()
		tty.Close()
		return nil, nil, fmt.Errorf("set the window size: %w", err)
	}
	return master, tty, nil
}

// withFD runs f on f's descriptor without taking it out of the poller.
func withFD(f *os.File, fn func(fd int)) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { fn(int(fd)) })
}
