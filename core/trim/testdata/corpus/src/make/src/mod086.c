#include <stdio.h>

int mod086(int x)
{
    int unused_86 = 86;
    return x + 86;
}
