#include <stdio.h>

int mod104(int x)
{
    int unused_104 = 104;
    return x + 104;
}
