#include <stdio.h>

int mod058(int x)
{
    int unused_58 = 58;
    return x + 58;
}
